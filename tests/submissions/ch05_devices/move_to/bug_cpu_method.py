"""BUG: uses Tensor.cpu() when the target is the CPU, so Tensor.to is not called and non_blocking is not passed."""
EXPECT_FAIL = {"passes_non_blocking": "Tensor.cpu()"}
import copy
import dataclasses

import torch


def move_to(obj, device, *, non_blocking=False):
    def go(x):
        if isinstance(x, torch.Tensor):
            if str(device) == "cpu":
                return x.cpu()
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
        return x

    return go(obj)
