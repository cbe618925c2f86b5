"""Correct, written differently: a structural match statement with class patterns and guards."""
from collections import defaultdict
from dataclasses import fields, is_dataclass, replace

import torch

EXPECT_PASS = True


def move_to(obj, device, *, non_blocking=False):
    def go(x):
        match x:
            case torch.Tensor():
                return x.to(device, non_blocking=non_blocking)
            case defaultdict():
                return type(x)(x.default_factory, [(k, go(v)) for k, v in x.items()])
            case dict():
                return type(x)({k: go(v) for k, v in x.items()})
            case list() | tuple() if type(x) in (list, tuple):
                return type(x)(map(go, x))
            case tuple() if hasattr(x, "_fields"):
                return x._make(map(go, x))
            case _ if is_dataclass(x) and not isinstance(x, type) and all(f.init for f in fields(x)):
                return replace(x, **{f.name: go(getattr(x, f.name)) for f in fields(x)})
            case _:
                return x

    return go(obj)
