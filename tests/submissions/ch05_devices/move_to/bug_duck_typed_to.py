"""BUG: calls .to(device) on any object with a .to method (e.g. an nn.Module), moving it in place."""
EXPECT_FAIL = {"generated_structures": "changed in place"}
import copy
import dataclasses

import torch


def move_to(obj, device, *, non_blocking=False):
    def go(x):
        if isinstance(x, torch.Tensor):
            return x.to(device, non_blocking=non_blocking)
        if isinstance(x, dict):
            out = copy.copy(x)
            out.clear()
            for k, v in x.items():
                out[k] = go(v)
            return out
        if type(x) is list:
            return [go(v) for v in x]
        if type(x) is tuple:
            return tuple(go(v) for v in x)
        if isinstance(x, tuple) and hasattr(type(x), "_fields"):
            return type(x)(*[go(v) for v in x])
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            fields = dataclasses.fields(x)
            if all(f.init for f in fields):
                return dataclasses.replace(x, **{f.name: go(getattr(x, f.name)) for f in fields})
        if hasattr(x, "to") and callable(x.to) and not isinstance(x, type):
            return x.to(device, non_blocking=non_blocking)
        return x

    return go(obj)
