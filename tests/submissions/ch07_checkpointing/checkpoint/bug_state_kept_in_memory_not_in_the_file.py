"""Bug: keeps the RNG, scheduler and scaler states in a module-level dict instead of the file, which only works when the same process saves and loads.

Written by an independent red team."""
EXPECT_FAIL = {'resumes_bit_for_bit': 'load_checkpoint in a new process'}

import os, random, tempfile
import numpy as np
import torch


def _np_state():
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
            "has_gauss": int(has_gauss), "cached_gaussian": float(cached)}


def _set_np_state(s):
    np.random.set_state((s["name"], s["keys"].numpy().astype(np.uint32), s["pos"],
                         s["has_gauss"], s["cached_gaussian"]))


import copy
_STASH = {}

def save_checkpoint(path, *, model, optimizer, step, scheduler=None, scaler=None, generator=None):
    path = os.fspath(path)
    ckpt = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": int(step),
        "rng": {
            "python": random.getstate(),
            "numpy": _np_state(),
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        },
    }
    if scheduler is not None:
        ckpt["scheduler"] = scheduler.state_dict()
    if scaler is not None:
        ckpt["scaler"] = scaler.state_dict()
    if generator is not None:
        ckpt["generator"] = generator.get_state()
    _STASH[os.path.abspath(path)] = {k: copy.deepcopy(ckpt[k]) for k in ("rng", "scheduler", "scaler") if k in ckpt}
    ckpt["rng"] = {}
    for k in ("scheduler", "scaler"):
        if k in ckpt: ckpt[k] = {}
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = tempfile.NamedTemporaryFile(dir=d, prefix=".ckpt-", suffix=".tmp", delete=False)
    try:
        with tmp:
            torch.save(ckpt, tmp)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp.name, path)
    except BaseException:
        try:
            os.remove(tmp.name)
        except OSError:
            pass
        raise


def load_checkpoint(path, *, model, optimizer, scheduler=None, scaler=None, generator=None,
                    map_location="cpu"):
    ckpt = torch.load(path, map_location=map_location, weights_only=True)
    ckpt.update(copy.deepcopy(_STASH.get(os.path.abspath(os.fspath(path)), {})))
    for name, obj in (("scheduler", scheduler), ("scaler", scaler), ("generator", generator)):
        if obj is not None and name not in ckpt:
            raise KeyError(name)
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(ckpt["scheduler"])
    if scaler is not None:
        scaler.load_state_dict(ckpt["scaler"])
    if generator is not None:
        generator.set_state(ckpt["generator"].cpu())
    rng = ckpt["rng"]
    random.setstate(rng["python"])
    _set_np_state(rng["numpy"])
    torch.set_rng_state(rng["torch"].cpu())
    if torch.cuda.is_available():
        for i, s in enumerate(rng["cuda"][: torch.cuda.device_count()]):
            torch.cuda.set_rng_state(s.cpu(), i)
    return ckpt["step"]
