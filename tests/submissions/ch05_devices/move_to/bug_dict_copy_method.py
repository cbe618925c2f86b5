"""Bug: starts from x.copy(), which turns a plain dict subclass into a dict (OrderedDict and defaultdict survive)."""
import dataclasses

import torch

EXPECT_FAIL = {'keeps_container_types': "TaggedDict at obj['tagged'] came back as a dict"}


def move_to(obj, device, *, non_blocking=False):
    def go(x):
        if isinstance(x, torch.Tensor):
            return x.to(device, non_blocking=non_blocking)
        if isinstance(x, dict):
            out = x.copy()
            for k in out:
                out[k] = go(out[k])
            return out
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
