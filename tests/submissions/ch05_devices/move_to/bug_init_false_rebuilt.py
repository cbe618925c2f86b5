"""Bug: rebuilds every dataclass instance from its init fields only, including those that also have an init=False field."""
import dataclasses
from collections import defaultdict

import torch

EXPECT_FAIL = {'returns_other_objects_as_is': 'init=False'}


def move_to(obj, device, *, non_blocking=False):
    def go(x):
        if isinstance(x, torch.Tensor):
            return x.to(device, non_blocking=non_blocking)
        if isinstance(x, dict):
            moved = {k: go(v) for k, v in x.items()}
            return type(x)(x.default_factory, moved) if isinstance(x, defaultdict) else type(x)(moved)
        if type(x) in (list, tuple):
            return type(x)(go(v) for v in x)
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*(go(v) for v in x))
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            fields = [f for f in dataclasses.fields(x) if f.init]
            return dataclasses.replace(x, **{f.name: go(getattr(x, f.name)) for f in fields})
        return x

    return go(obj)
