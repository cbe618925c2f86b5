"""Correct, written differently: torch.is_tensor, _replace for named tuples, and non_blocking only passed when set."""
import dataclasses
from collections import defaultdict

import torch

EXPECT_PASS = True


def move_to(obj, device, *, non_blocking=False):
    def rec(x):
        return move_to(x, device, non_blocking=non_blocking)

    if torch.is_tensor(obj):
        return obj.to(device, non_blocking=True) if non_blocking else obj.to(device)
    if isinstance(obj, dict):
        args = (obj.default_factory,) if isinstance(obj, defaultdict) else ()
        return obj.__class__(*args, {key: rec(value) for key, value in obj.items()})
    if obj.__class__ is list:
        return [rec(item) for item in obj]
    if obj.__class__ is tuple:
        return tuple(rec(item) for item in obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields") and hasattr(obj, "_replace"):
        return obj._replace(**{name: rec(getattr(obj, name)) for name in obj._fields})
    is_instance = dataclasses.is_dataclass(obj) and not isinstance(obj, type)
    if is_instance and all(f.init for f in dataclasses.fields(obj)):
        return dataclasses.replace(obj, **{f.name: rec(getattr(obj, f.name)) for f in dataclasses.fields(obj)})
    return obj
