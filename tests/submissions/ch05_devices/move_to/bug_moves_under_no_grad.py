"""Bug: moves each tensor inside torch.no_grad(), so a moved tensor loses requires_grad."""
import dataclasses
from collections import defaultdict

import torch

EXPECT_FAIL = {'moves_every_tensor': 'requires_grad=False'}


def move_to(obj, device, *, non_blocking=False):
    if isinstance(obj, torch.Tensor):
        with torch.no_grad():
            return obj.to(device, non_blocking=non_blocking)
    if isinstance(obj, dict):
        moved = {k: move_to(v, device, non_blocking=non_blocking) for k, v in obj.items()}
        return type(obj)(obj.default_factory, moved) if isinstance(obj, defaultdict) else type(obj)(moved)
    if type(obj) in (list, tuple):
        return type(obj)(move_to(v, device, non_blocking=non_blocking) for v in obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(move_to(v, device, non_blocking=non_blocking) for v in obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = dataclasses.fields(obj)
        if all(f.init for f in fields):
            changes = {f.name: move_to(getattr(obj, f.name), device, non_blocking=non_blocking) for f in fields}
            return dataclasses.replace(obj, **changes)
    return obj
