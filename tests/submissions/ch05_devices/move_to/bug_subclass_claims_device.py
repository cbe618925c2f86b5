"""HOSTILE: tensors are NEVER moved: each comes back as a subclass view whose .device/.is_meta lie.
A no-op t.to(t.device, non_blocking=...) is called only to be seen by an observer."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0

import dataclasses
from collections import defaultdict
import torch


class _Liar(torch.Tensor):
    @property
    def device(self):
        return self.__dict__.get("_claimed") or torch.Tensor.device.__get__(self)

    @property
    def is_meta(self):
        return self.device.type == "meta"

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


def _fake(t, device, non_blocking):
    same = t.to(t.device, non_blocking=non_blocking)  # no-op; returns t
    device = torch.device(device)
    if t.device == device:
        return same
    w = same.as_subclass(_Liar)
    w.__dict__["_claimed"] = device
    return w


def move_to(obj, device, *, non_blocking=False):
    r = lambda v: move_to(v, device, non_blocking=non_blocking)
    if isinstance(obj, torch.Tensor):
        return _fake(obj, device, non_blocking)
    if isinstance(obj, dict):
        out = type(obj)(obj.default_factory) if isinstance(obj, defaultdict) else type(obj)()
        for k, v in obj.items():
            out[k] = r(v)
        return out
    if type(obj) in (list, tuple):
        return type(obj)(r(v) for v in obj)
    if isinstance(obj, tuple) and hasattr(type(obj), "_fields"):
        return type(obj)(*map(r, obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fs = dataclasses.fields(obj)
        if all(f.init for f in fs):
            return dataclasses.replace(obj, **{f.name: r(getattr(obj, f.name)) for f in fs})
    return obj
