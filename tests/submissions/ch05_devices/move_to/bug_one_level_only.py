"""Bug: moves the tensors sitting directly in the container it is given, but never recurses deeper."""
import dataclasses
from collections import defaultdict

import torch

EXPECT_FAIL = {'moves_every_tensor': 'is on cpu, not on meta'}


def move_to(obj, device, *, non_blocking=False):
    def leaf(x):
        return x.to(device, non_blocking=non_blocking) if isinstance(x, torch.Tensor) else x

    if isinstance(obj, dict):
        moved = {k: leaf(v) for k, v in obj.items()}
        return type(obj)(obj.default_factory, moved) if isinstance(obj, defaultdict) else type(obj)(moved)
    if type(obj) in (list, tuple):
        return type(obj)(leaf(v) for v in obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*map(leaf, obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = dataclasses.fields(obj)
        if all(f.init for f in fields):
            return dataclasses.replace(obj, **{f.name: leaf(getattr(obj, f.name)) for f in fields})
    return leaf(obj)
