"""Bug: turns a dataclass instance into a dict with dataclasses.asdict instead of rebuilding it."""
import dataclasses
from collections import defaultdict

import torch

EXPECT_FAIL = {'keeps_container_types': 'dataclasses.asdict'}


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
            if all(f.init for f in dataclasses.fields(x)):
                return go(dataclasses.asdict(x))
        return x

    return go(obj)
