"""Bug: turns a named tuple into a plain tuple of its moved fields."""
import dataclasses
from collections import defaultdict

import torch

EXPECT_FAIL = {'keeps_container_types': "named tuple's class"}


def move_to(obj, device, *, non_blocking=False):
    def go(x):
        if isinstance(x, torch.Tensor):
            return x.to(device, non_blocking=non_blocking)
        if isinstance(x, dict):
            moved = {k: go(v) for k, v in x.items()}
            return type(x)(x.default_factory, moved) if isinstance(x, defaultdict) else type(x)(moved)
        if type(x) is list:
            return [go(v) for v in x]
        if type(x) is tuple or hasattr(x, "_fields"):
            return tuple(go(v) for v in x)
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            fields = dataclasses.fields(x)
            if all(f.init for f in fields):
                return dataclasses.replace(x, **{f.name: go(getattr(x, f.name)) for f in fields})
        return x

    return go(obj)
