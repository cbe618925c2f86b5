"""Bug: when a scheduler, scaler or generator is passed but the checkpoint holds no state for it, load_checkpoint quietly skips it instead of raising KeyError."""
import os
import random
import tempfile

import numpy as np
import torch

EXPECT_FAIL = {'missing_state_raises_key_error': 'a missing scheduler entry was skipped silently'}


def _rng():
    st = np.random.get_state(legacy=False)
    return {
        "py": random.getstate(),
        "np": {"bit_generator": st["bit_generator"], "key": torch.from_numpy(st["state"]["key"].astype(np.int64)),
               "pos": int(st["state"]["pos"]), "has_gauss": int(st["has_gauss"]), "gauss": float(st["gauss"])},
        "cpu": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def _restore_rng(r):
    random.setstate(r["py"])
    np.random.set_state({"bit_generator": r["np"]["bit_generator"],
                         "state": {"key": r["np"]["key"].cpu().numpy().astype(np.uint32), "pos": r["np"]["pos"]},
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
    ckpt = torch.load(path, map_location=map_location, weights_only=True)
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    if scheduler is not None and "scheduler" in ckpt:
        scheduler.load_state_dict(ckpt["scheduler"])
    if scaler is not None and "scaler" in ckpt:
        scaler.load_state_dict(ckpt["scaler"])
    if generator is not None and "generator" in ckpt:
        generator.set_state(ckpt["generator"].cpu())
    _restore_rng(ckpt["rng"])
    return ckpt["step"]
