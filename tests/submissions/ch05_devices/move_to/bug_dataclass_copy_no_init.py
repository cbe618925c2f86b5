"""Bug: copy.copy()s a dataclass and object.__setattr__s its fields, so the new instance never goes through __init__ / __post_init__."""
import copy
import dataclasses
from collections import defaultdict

import torch

EXPECT_FAIL = {'keeps_container_types': 'without calling its __init__'}


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
            fields = dataclasses.fields(x)
            if all(f.init for f in fields):
                out = copy.copy(x)
                for f in fields:
                    object.__setattr__(out, f.name, go(getattr(x, f.name)))
                return out
        return x

    return go(obj)
