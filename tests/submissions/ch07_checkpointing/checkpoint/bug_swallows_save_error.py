"""Bug: when saving fails it cleans up the temporary file but then just prints a warning instead of re-raising, so the caller never learns the checkpoint was not written."""
import os
import random
import tempfile

import numpy as np
import torch

EXPECT_FAIL = {'failed_save_keeps_the_previous_file': 'the exception was caught and not re-raised'}


def _get_rng_states():
    np_name, np_keys, np_pos, np_has_gauss, np_gauss = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": [np_name, torch.from_numpy(np_keys.astype(np.int64)), int(np_pos), int(np_has_gauss), float(np_gauss)],
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def _set_rng_states(states):
    random.setstate(states["python"])
    np_name, np_keys, np_pos, np_has_gauss, np_gauss = states["numpy"]
    np.random.set_state((np_name, np_keys.cpu().numpy().astype(np.uint32), np_pos, np_has_gauss, np_gauss))
    torch.set_rng_state(states["torch"].cpu())
    if torch.cuda.is_available():
        for i, s in enumerate(states["cuda"][:torch.cuda.device_count()]):
            torch.cuda.set_rng_state(s.cpu(), i)


def save_checkpoint(path, *, model, optimizer, step, scheduler=None, scaler=None, generator=None):
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": int(step),
        "rng": _get_rng_states(),
    }
    if scheduler is not None:
        checkpoint["scheduler"] = scheduler.state_dict()
    if scaler is not None:
        checkpoint["scaler"] = scaler.state_dict()
    if generator is not None:
        checkpoint["generator"] = generator.get_state()

    path = os.path.abspath(path)
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".ckpt-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(checkpoint, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        if os.path.exists(tmp):
            os.remove(tmp)
        print(f"warning: could not save checkpoint to {path}: {err!r}")


def load_checkpoint(path, *, model, optimizer, scheduler=None, scaler=None, generator=None, map_location="cpu"):
    checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    for name, obj in [("scheduler", scheduler), ("scaler", scaler), ("generator", generator)]:
        if obj is not None and name not in checkpoint:
            raise KeyError(f"checkpoint has no '{name}' entry")

    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(checkpoint["scheduler"])
    if scaler is not None:
        scaler.load_state_dict(checkpoint["scaler"])
    if generator is not None:
        generator.set_state(checkpoint["generator"].cpu())
    _set_rng_states(checkpoint["rng"])
    return checkpoint["step"]
