"""Bug: deep-copies the input first and then moves in place, so unmoved tensors and other objects come back as copies."""
import copy
import dataclasses

import torch

EXPECT_FAIL = {
    'same_tensor_when_already_there': 'returned a copy',
    'returns_other_objects_as_is': 'came back as a new',
}


def move_to(obj, device, *, non_blocking=False):
    def go(x):
        if isinstance(x, torch.Tensor):
            return x.to(device, non_blocking=non_blocking)
        if isinstance(x, dict):
            for k in x:
                x[k] = go(x[k])
            return x
        if type(x) is list:
            x[:] = [go(v) for v in x]
            return x
        if type(x) is tuple:
            return tuple(go(v) for v in x)
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return x._make(go(v) for v in x)
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            fields = dataclasses.fields(x)
            if all(f.init for f in fields):
                return dataclasses.replace(x, **{f.name: go(getattr(x, f.name)) for f in fields})
        return x

    return go(copy.deepcopy(obj))
