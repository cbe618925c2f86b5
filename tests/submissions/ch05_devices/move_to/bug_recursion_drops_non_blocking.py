"""Bug: the recursive calls leave out non_blocking, so only a bare tensor passed in directly receives it."""
import dataclasses
from collections import defaultdict

import torch

EXPECT_FAIL = {'passes_non_blocking': 'got non_blocking=False'}


def move_to(obj, device, *, non_blocking=False):
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=non_blocking)
    if isinstance(obj, dict):
        moved = {k: move_to(v, device) for k, v in obj.items()}
        return type(obj)(obj.default_factory, moved) if isinstance(obj, defaultdict) else type(obj)(moved)
    if type(obj) in (list, tuple):
        return type(obj)(move_to(v, device) for v in obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(move_to(v, device) for v in obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = dataclasses.fields(obj)
        if all(f.init for f in fields):
            return dataclasses.replace(obj, **{f.name: move_to(getattr(obj, f.name), device) for f in fields})
    return obj
