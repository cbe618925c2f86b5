"""Correct, written differently: flat keys, a uniquely named temporary file opened with os.open(O_EXCL) in the target folder, os.fsync on the raw descriptor, Path.replace, and try/finally cleanup driven by a flag."""
import os
import random
import uuid
from pathlib import Path

import numpy as np
import torch

EXPECT_PASS = True


def save_checkpoint(path, *, model, optimizer, step, scheduler=None, scaler=None, generator=None):
    final = Path(path).absolute()
    final.parent.mkdir(parents=True, exist_ok=True)

    mt_name, mt_keys, mt_pos, mt_has_gauss, mt_gauss = np.random.get_state()
    blob = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": int(step),
        "rng_python": random.getstate(),
        "rng_numpy_name": str(mt_name),
        "rng_numpy_keys": torch.tensor(mt_keys.tolist(), dtype=torch.int64),
        "rng_numpy_pos": int(mt_pos),
        "rng_numpy_has_gauss": int(mt_has_gauss),
        "rng_numpy_gauss": float(mt_gauss),
        "rng_torch": torch.random.get_rng_state(),
        "rng_cuda": list(torch.cuda.get_rng_state_all()) if torch.cuda.is_available() else [],
    }
    if scheduler is not None:
        blob["scheduler"] = scheduler.state_dict()
    if scaler is not None:
        blob["scaler"] = scaler.state_dict()
    if generator is not None:
        blob["generator"] = generator.get_state()

    temp = final.with_name(f".{final.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    finished = False
    try:
        with open(fd, "wb", closefd=True) as handle:
            torch.save(blob, handle)
            handle.flush()
            os.fsync(handle.fileno())
        temp.replace(final)
        finished = True
    finally:
        if not finished and temp.exists():
            temp.unlink()


def load_checkpoint(path, *, model, optimizer, scheduler=None, scaler=None, generator=None, map_location="cpu"):
    blob = torch.load(path, map_location=map_location, weights_only=True)
    if scheduler is not None and "scheduler" not in blob:
        raise KeyError("scheduler")
    if scaler is not None and "scaler" not in blob:
        raise KeyError("scaler")
    if generator is not None and "generator" not in blob:
        raise KeyError("generator")

    model.load_state_dict(blob["model"])
    optimizer.load_state_dict(blob["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(blob["scheduler"])
    if scaler is not None:
        scaler.load_state_dict(blob["scaler"])

    random.setstate(blob["rng_python"])
    keys = np.asarray(blob["rng_numpy_keys"].cpu().tolist(), dtype=np.uint32)
    np.random.set_state((blob["rng_numpy_name"], keys, blob["rng_numpy_pos"],
                         blob["rng_numpy_has_gauss"], blob["rng_numpy_gauss"]))
    torch.random.set_rng_state(blob["rng_torch"].cpu())
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        for idx, st in enumerate(blob["rng_cuda"]):
            if idx >= count:
                break
            torch.cuda.set_rng_state(st.cpu(), device=idx)

    if generator is not None:
        generator.set_state(blob["generator"].cpu())
    return blob["step"]
