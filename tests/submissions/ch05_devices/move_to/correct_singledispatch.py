"""Correct, written differently: functools.singledispatch with one handler per container type."""
import copy
import dataclasses
import functools

import torch

EXPECT_PASS = True


@functools.singledispatch
def _move(x, to):
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        fields = dataclasses.fields(x)
        if all(f.init for f in fields):
            return dataclasses.replace(x, **{f.name: _move(getattr(x, f.name), to) for f in fields})
    return x


@_move.register
def _(x: dict, to):
    out = copy.copy(x)
    for key in list(out):
        out[key] = _move(out[key], to)
    return out


@_move.register
def _(x: tuple, to):
    if hasattr(x, "_fields"):
        return type(x)._make(_move(v, to) for v in x)
    return tuple(_move(v, to) for v in x) if type(x) is tuple else x


_move.register(torch.Tensor, lambda x, to: to(x))
_move.register(list, lambda x, to: [_move(v, to) for v in x] if type(x) is list else x)


def move_to(obj, device, *, non_blocking=False):
    return _move(obj, lambda t: t.to(device, non_blocking=non_blocking))
