"""Correct, written differently: pathlib, NamedTemporaryFile(dir=..., delete=False) with a success flag checked in finally, NumPy's state as plain lists, RNGs restored first and a missing state found by indexing (KeyError)."""
import os
import random
import tempfile
from pathlib import Path

import numpy as np
import torch

EXPECT_PASS = True


def save_checkpoint(path, *, model, optimizer, step, scheduler=None, scaler=None, generator=None):
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)

    np_state = np.random.get_state(legacy=False)
    payload = {
        "step": int(step),
        "model_state": model.state_dict(),
        "optim_state": optimizer.state_dict(),
        "python_rng": random.getstate(),
        "numpy_rng": {
            "bit_generator": np_state["bit_generator"],
            "key": np_state["state"]["key"].tolist(),
            "pos": int(np_state["state"]["pos"]),
            "has_gauss": int(np_state["has_gauss"]),
            "gauss": float(np_state["gauss"]),
        },
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": [s for s in torch.cuda.get_rng_state_all()] if torch.cuda.is_available() else [],
    }
    if scheduler is not None:
        payload["scheduler"] = scheduler.state_dict()
    if scaler is not None:
        payload["scaler"] = scaler.state_dict()
    if generator is not None:
        payload["generator"] = generator.get_state()

    tmp = tempfile.NamedTemporaryFile(mode="wb", dir=target.parent, prefix=target.name + ".",
                                      suffix=".part", delete=False)
    done = False
    try:
        with tmp:
            torch.save(payload, tmp)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp.name, target)
        done = True
    finally:
        if not done:
            Path(tmp.name).unlink(missing_ok=True)


def load_checkpoint(path, *, model, optimizer, scheduler=None, scaler=None, generator=None, map_location="cpu"):
    payload = torch.load(Path(path), map_location=map_location, weights_only=True)

    random.setstate(payload["python_rng"])
    npr = payload["numpy_rng"]
    np.random.set_state({
        "bit_generator": npr["bit_generator"],
        "state": {"key": np.array(npr["key"], dtype=np.uint32), "pos": npr["pos"]},
        "has_gauss": npr["has_gauss"],
        "gauss": npr["gauss"],
    })
    torch.set_rng_state(payload["torch_rng"].to("cpu"))
    cuda_states = payload["cuda_rng"]
    if torch.cuda.is_available():
        for i in range(min(len(cuda_states), torch.cuda.device_count())):
            torch.cuda.set_rng_state(cuda_states[i].to("cpu"), i)

    if generator is not None:
        generator.set_state(payload["generator"].to("cpu"))
    if scaler is not None:
        scaler.load_state_dict(payload["scaler"])
    if scheduler is not None:
        scheduler.load_state_dict(payload["scheduler"])
    optimizer.load_state_dict(payload["optim_state"])
    model.load_state_dict(payload["model_state"])
    return payload["step"]
