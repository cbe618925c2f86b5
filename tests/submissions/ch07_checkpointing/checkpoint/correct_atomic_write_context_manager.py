"""Correct, written differently: an atomic_write context manager (mkstemp in the same folder, fsync, os.replace, unlink on BaseException), NumPy state kept as a uint32 tensor, and a generic missing-state check."""
import contextlib
import os
import random
import tempfile

import numpy as np
import torch

EXPECT_PASS = True

OPTIONAL = ("scheduler", "scaler", "generator")


@contextlib.contextmanager
def atomic_write(path):
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", dir=directory)
    f = os.fdopen(fd, "wb")
    try:
        yield f
        f.flush()
        os.fsync(f.fileno())
        f.close()
        os.replace(tmp, path)
    except BaseException:
        try:
            f.close()
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        raise


def _get_state(obj):
    return obj.get_state() if isinstance(obj, torch.Generator) else obj.state_dict()


def _set_state(obj, state):
    if isinstance(obj, torch.Generator):
        obj.set_state(state.cpu())
    else:
        obj.load_state_dict(state)


def save_checkpoint(path, *, model, optimizer, step, scheduler=None, scaler=None, generator=None):
    legacy = np.random.get_state()
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": int(step),
        "random_state": random.getstate(),
        "numpy_state": [legacy[0], torch.from_numpy(legacy[1].copy()), int(legacy[2]), int(legacy[3]),
                        float(legacy[4])],
        "torch_state": torch.get_rng_state(),
        "cuda_states": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }
    for name, obj in zip(OPTIONAL, (scheduler, scaler, generator)):
        if obj is not None:
            checkpoint[name] = _get_state(obj)
    with atomic_write(os.fspath(path)) as f:
        torch.save(checkpoint, f)


def load_checkpoint(path, *, model, optimizer, scheduler=None, scaler=None, generator=None, map_location="cpu"):
    checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    given = dict(zip(OPTIONAL, (scheduler, scaler, generator)))
    for name, obj in given.items():
        if obj is not None and name not in checkpoint:
            raise KeyError(name)

    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    for name, obj in given.items():
        if obj is not None:
            _set_state(obj, checkpoint[name])

    random.setstate(checkpoint["random_state"])
    name, keys, pos, has_gauss, gauss = checkpoint["numpy_state"]
    np.random.set_state((name, keys.cpu().numpy(), pos, has_gauss, gauss))
    torch.set_rng_state(checkpoint["torch_state"].cpu())
    if torch.cuda.is_available():
        for device in range(min(torch.cuda.device_count(), len(checkpoint["cuda_states"]))):
            torch.cuda.set_rng_state(checkpoint["cuda_states"][device].cpu(), device)
    return checkpoint["step"]
