"""Bug: remembers the id of every object visited and returns a repeat untouched, so a shared tensor's second occurrence stays put."""
import dataclasses
from collections import defaultdict

import torch

EXPECT_FAIL = {'moves_every_tensor': "obj['pair'][1][1]['deep'] is on cpu"}


def move_to(obj, device, *, non_blocking=False):
    seen = set()

    def go(x):
        if id(x) in seen:
            return x
        seen.add(id(x))
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
            fields = dataclasses.fields(x)
            if all(f.init for f in fields):
                return dataclasses.replace(x, **{f.name: go(getattr(x, f.name)) for f in fields})
        return x

    return go(obj)
