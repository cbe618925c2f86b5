"""Bug: writes the moved values back into the caller's dicts (x[k] = ...) and returns them."""
import dataclasses

import torch

EXPECT_FAIL = {'input_not_modified': 'was replaced'}


def move_to(obj, device, *, non_blocking=False):
    def go(x):
        if isinstance(x, torch.Tensor):
            return x.to(device, non_blocking=non_blocking)
        if isinstance(x, dict):
            for k, v in x.items():
                x[k] = go(v)
            return x
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
