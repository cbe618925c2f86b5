"""Correct, written differently: no recursion, an explicit stack walks the containers in post-order."""
import dataclasses
from collections import defaultdict

import torch

EXPECT_PASS = True


def _split(x):
    if isinstance(x, dict):
        keys = list(x)
        if isinstance(x, defaultdict):
            return [x[k] for k in keys], lambda vs: type(x)(x.default_factory, zip(keys, vs))
        return [x[k] for k in keys], lambda vs: type(x)(dict(zip(keys, vs)))
    if type(x) in (list, tuple):
        return list(x), type(x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return list(x), lambda vs: type(x)(*vs)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        fields = dataclasses.fields(x)
        if all(f.init for f in fields):
            names = [f.name for f in fields]
            return [getattr(x, n) for n in names], lambda vs: dataclasses.replace(x, **dict(zip(names, vs)))
    return None


def move_to(obj, device, *, non_blocking=False):
    todo, done = [(obj, None)], []
    while todo:
        node, parts = todo.pop()
        if parts is not None:
            cut = len(done) - len(parts[0])
            done[cut:] = [parts[1](done[cut:])]
            continue
        parts = _split(node)
        if parts is None:
            done.append(node.to(device, non_blocking=non_blocking) if isinstance(node, torch.Tensor) else node)
        else:
            todo.append((node, parts))
            todo.extend((child, None) for child in reversed(parts[0]))
    return done[0]
