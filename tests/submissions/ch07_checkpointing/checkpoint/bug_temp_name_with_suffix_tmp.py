"""Bug: the temporary file is path.with_suffix('.tmp'): for a path that already ends in .tmp the 'temporary' file IS
path, so it is written in place (not atomic, and removed on failure)."""
import os
import random
from pathlib import Path

import numpy as np
import torch

EXPECT_FAIL = {"saves_through_a_temporary_file": "path itself"}


def save_checkpoint(path, *, model, optimizer, step, scheduler=None, scaler=None, generator=None):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    np_state = np.random.get_state()
    state = {
        "step": int(step),
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "python_rng": random.getstate(),
        "numpy_rng": (np_state[0], np_state[1].tolist(), int(np_state[2]), int(np_state[3]), float(np_state[4])),
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }
    if scheduler is not None:
        state["scheduler"] = scheduler.state_dict()
    if scaler is not None:
        state["scaler"] = scaler.state_dict()
    if generator is not None:
        state["generator"] = generator.get_state()

    tmp_path = path.with_suffix(".tmp")
    ok = False
    try:
        with open(tmp_path, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_path, path)
        ok = True
    finally:
        if not ok:
            tmp_path.unlink(missing_ok=True)


def load_checkpoint(path, *, model, optimizer, scheduler=None, scaler=None, generator=None, map_location="cpu"):
    state = torch.load(path, map_location=map_location, weights_only=True)
    if scheduler is not None and "scheduler" not in state:
        raise KeyError("scheduler")
    if scaler is not None and "scaler" not in state:
        raise KeyError("scaler")
    if generator is not None and "generator" not in state:
        raise KeyError("generator")

    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(state["scheduler"])
    if scaler is not None:
        scaler.load_state_dict(state["scaler"])
    if generator is not None:
        generator.set_state(state["generator"].cpu())

    random.setstate(state["python_rng"])
    name, keys, pos, has_gauss, gauss = state["numpy_rng"]
    np.random.set_state((name, np.array(keys, dtype=np.uint32), pos, has_gauss, gauss))
    torch.set_rng_state(state["torch_rng"].cpu())
    if torch.cuda.is_available():
        for i in range(min(torch.cuda.device_count(), len(state["cuda_rng"]))):
            torch.cuda.set_rng_state(state["cuda_rng"][i].cpu(), i)
    return state["step"]
