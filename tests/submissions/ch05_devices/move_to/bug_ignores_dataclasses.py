"""Bug: handles dicts, lists, tuples and named tuples but returns dataclass instances untouched."""
from collections import defaultdict

import torch

EXPECT_FAIL = {'moves_every_tensor': 'does not recurse into dataclasses'}


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
        return x

    return go(obj)
