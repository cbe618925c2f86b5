"""Correct, written differently: one recursive helper walking an isinstance / exact-type chain."""
import dataclasses
from collections import defaultdict

import torch

EXPECT_PASS = True


def move_to(obj, device, *, non_blocking=False):
    def go(x):
        if isinstance(x, torch.Tensor):
            return x.to(device, non_blocking=non_blocking)
        if isinstance(x, defaultdict):
            return type(x)(x.default_factory, {k: go(v) for k, v in x.items()})
        if isinstance(x, dict):
            return type(x)({k: go(v) for k, v in x.items()})
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
