"""Correct: tempfile.mkstemp next to the checkpoint, flush + fsync, os.replace, the temporary file removed on any BaseException; NumPy's key array kept as an int64 tensor."""
import os
import random
import tempfile

import numpy as np
import torch

EXPECT_PASS = True


def _rng_snapshot():
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": (name, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(gauss)),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def _rng_restore(snap):
    random.setstate(snap["python"])
    name, keys, pos, has_gauss, gauss = snap["numpy"]
    np.random.set_state((name, keys.cpu().numpy().astype(np.uint32), pos, has_gauss, gauss))
    torch.set_rng_state(snap["torch"].cpu())
    present = torch.cuda.device_count() if torch.cuda.is_available() else 0
    for device, state in enumerate(snap["cuda"]):
        if device < present:
            torch.cuda.set_rng_state(state.cpu(), device)


def save_checkpoint(path, *, model, optimizer, step, scheduler=None, scaler=None, generator=None):
    ckpt = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": int(step),
        "rng": _rng_snapshot(),
    }
    if scheduler is not None:
        ckpt["scheduler"] = scheduler.state_dict()
    if scaler is not None:
        ckpt["scaler"] = scaler.state_dict()
    if generator is not None:
        ckpt["generator"] = generator.get_state()

    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp_path = tempfile.mkstemp(dir=folder, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(ckpt, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_path, path)
    except BaseException:
        try:
            os.remove(tmp_path)
        except FileNotFoundError:
            pass
        raise


def load_checkpoint(path, *, model, optimizer, scheduler=None, scaler=None, generator=None, map_location="cpu"):
    ckpt = torch.load(path, map_location=map_location, weights_only=True)
    for key, obj in (("scheduler", scheduler), ("scaler", scaler), ("generator", generator)):
        if obj is not None and key not in ckpt:
            raise KeyError(f"checkpoint has no {key} state")
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(ckpt["scheduler"])
    if scaler is not None:
        scaler.load_state_dict(ckpt["scaler"])
    if generator is not None:
        generator.set_state(ckpt["generator"].cpu())
    _rng_restore(ckpt["rng"])
    return ckpt["step"]
