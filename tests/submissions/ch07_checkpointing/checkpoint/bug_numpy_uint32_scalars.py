"""Bug: converts NumPy's key array with list(...) instead of .tolist(), which keeps numpy.uint32 scalars, and loads with weights_only=False so that works; torch.load(path, weights_only=True) then refuses the file."""
import os
import random
import tempfile

import numpy as np
import torch

EXPECT_FAIL = {'loads_with_weights_only': 'NumPy values are pickled objects: np.random.get_state'}


def _rng():
    st = np.random.get_state(legacy=False)
    return {
        "py": random.getstate(),
        "np": {"bit_generator": st["bit_generator"], "key": list(st["state"]["key"]),
               "pos": int(st["state"]["pos"]), "has_gauss": int(st["has_gauss"]), "gauss": float(st["gauss"])},
        "cpu": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def _restore_rng(r):
    random.setstate(r["py"])
    np.random.set_state({"bit_generator": r["np"]["bit_generator"],
                         "state": {"key": np.array(r["np"]["key"], dtype=np.uint32), "pos": r["np"]["pos"]},
                         "has_gauss": r["np"]["has_gauss"], "gauss": r["np"]["gauss"]})
    torch.set_rng_state(r["cpu"].cpu())
    for idx in range(min(len(r["cuda"]), torch.cuda.device_count())):
        torch.cuda.set_rng_state(r["cuda"][idx].cpu(), idx)


def save_checkpoint(path, *, model, optimizer, step, scheduler=None, scaler=None, generator=None):
    ckpt = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": int(step), "rng": _rng()}
    if scheduler is not None:
        ckpt["scheduler"] = scheduler.state_dict()
    if scaler is not None:
        ckpt["scaler"] = scaler.state_dict()
    if generator is not None:
        ckpt["generator"] = generator.get_state()

    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = tempfile.NamedTemporaryFile(dir=folder, delete=False, suffix=".tmp")
    try:
        with tmp:
            torch.save(ckpt, tmp)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp.name, path)
    except BaseException:
        if os.path.exists(tmp.name):
            os.unlink(tmp.name)
        raise


def load_checkpoint(path, *, model, optimizer, scheduler=None, scaler=None, generator=None, map_location="cpu"):
    ckpt = torch.load(path, map_location=map_location, weights_only=False)
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    # ckpt[...] raises KeyError by itself when the checkpoint lacks a state we were given
    if scheduler is not None:
        scheduler.load_state_dict(ckpt["scheduler"])
    if scaler is not None:
        scaler.load_state_dict(ckpt["scaler"])
    if generator is not None:
        generator.set_state(ckpt["generator"].cpu())
    _restore_rng(ckpt["rng"])
    return ckpt["step"]
