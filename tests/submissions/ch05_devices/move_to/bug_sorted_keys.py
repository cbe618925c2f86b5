"""Bug: walks the dict keys in sorted(x, key=str) order, so the keys no longer come back in the input's order."""
import dataclasses
from collections import defaultdict

import torch

EXPECT_FAIL = {'keeps_container_types': 'do not sort them'}


def move_to(obj, device, *, non_blocking=False):
    def go(x):
        if isinstance(x, torch.Tensor):
            return x.to(device, non_blocking=non_blocking)
        if isinstance(x, dict):
            moved = {k: go(x[k]) for k in sorted(x, key=str)}
            return type(x)(x.default_factory, moved) if isinstance(x, defaultdict) else type(x)(moved)
        if type(x) in (list, tuple):
            return type(x)(go(v) for v in x)
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*(go(v) for v in x))
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            fields = dataclasses.fields(x)
            if all(f.init for f in fields):
                return dataclasses.replace(x, **{f.name: go(getattr(x, f.name)) for f in fields})
        return x

    return go(obj)
