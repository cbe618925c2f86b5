"""Bug: knows only two devices, calling .cuda() for a GPU target and .cpu() for anything else ("meta" too)."""
import dataclasses
from collections import defaultdict

import torch

EXPECT_FAIL = {'moves_every_tensor': 'is on cpu, not on meta'}


def move_to(obj, device, *, non_blocking=False):
    def go(x):
        if isinstance(x, torch.Tensor):
            if torch.device(device).type == "cuda":
                return x.cuda(device, non_blocking=non_blocking)
            return x.cpu()
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
