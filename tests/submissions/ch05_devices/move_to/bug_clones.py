"""Bug: calls .clone() after .to(), so a tensor already on the device comes back as a copy."""
import dataclasses
from collections import defaultdict

import torch

EXPECT_FAIL = {'same_tensor_when_already_there': 'returned a copy'}


def move_to(obj, device, *, non_blocking=False):
    def go(x):
        if isinstance(x, torch.Tensor):
            return x.to(device, non_blocking=non_blocking).clone()
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
                return dataclasses.replace(x, **{f.name: go(getattr(x, f.name)) for f in fields})
        return x

    return go(obj)
