"""Bug: takes anything whose class has `_fields` for a named tuple, without checking that it is a tuple, so an
object of another type that has a `_fields` attribute (and iterates) is rebuilt instead of returned as is."""
import dataclasses
from collections import defaultdict

import torch

EXPECT_FAIL = {'generated_structures': 'FieldsRecord'}


def move_to(obj, device, *, non_blocking=False):
    def go(x):
        if isinstance(x, torch.Tensor):
            return x.to(device, non_blocking=non_blocking)
        if isinstance(x, defaultdict):
            return type(x)(x.default_factory, [(k, go(v)) for k, v in x.items()])
        if isinstance(x, dict):
            return type(x)({k: go(v) for k, v in x.items()})
        if hasattr(type(x), "_fields"):
            return type(x)(*(go(v) for v in x))
        if type(x) in (list, tuple):
            return type(x)(go(v) for v in x)
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            fields = dataclasses.fields(x)
            if all(f.init for f in fields):
                return dataclasses.replace(x, **{f.name: go(getattr(x, f.name)) for f in fields})
        return x

    return go(obj)
