"""Chapter 05 (devices): reference solutions for move_to, positional_encoding (``PositionalEncoding``) and
find_max_batch_size."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn


def _is_named_tuple(obj: Any) -> bool:
    # A named tuple is a tuple subclass with `_fields`; a plain tuple subclass is "another type".
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


def _is_rebuildable_dataclass(obj: Any) -> bool:
    # is_dataclass is also True for the dataclass *class*: only instances are rebuilt, and only when
    # replace() can rebuild them (every field is an __init__ argument).
    return (dataclasses.is_dataclass(obj) and not isinstance(obj, type)
            and all(f.init for f in dataclasses.fields(obj)))


def move_to(obj: Any, device: torch.device | str, *, non_blocking: bool = False) -> Any:
    """``obj`` with every tensor inside dicts, lists, tuples, named tuples and dataclasses moved to ``device``.

    Containers are rebuilt, never modified; anything else comes back as the very same object.
    """
    if isinstance(obj, torch.Tensor):
        # Tensor.to returns the tensor itself when nothing changes: no copy of data already there.
        return obj.to(device, non_blocking=non_blocking)
    if isinstance(obj, dict):
        items = [(key, move_to(value, device, non_blocking=non_blocking)) for key, value in obj.items()]
        if type(obj) is dict:
            return dict(items)
        rebuilt = copy.copy(obj)  # the same type, a defaultdict's factory with it; then new contents
        rebuilt.clear()
        rebuilt.update(items)  # insertion order: the keys' order is kept
        return rebuilt
    if type(obj) is list:
        return [move_to(value, device, non_blocking=non_blocking) for value in obj]
    if type(obj) is tuple:
        return tuple(move_to(value, device, non_blocking=non_blocking) for value in obj)
    if _is_named_tuple(obj):
        return type(obj)(*(move_to(value, device, non_blocking=non_blocking) for value in obj))
    if _is_rebuildable_dataclass(obj):
        changes = {f.name: move_to(getattr(obj, f.name), device, non_blocking=non_blocking)
                   for f in dataclasses.fields(obj)}
        return dataclasses.replace(obj, **changes)  # a new instance; works for frozen dataclasses too
    return obj


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal position encoding of "Attention Is All You Need" to ``(batch, seq, dim)`` input."""

    def __init__(self, dim: int, max_len: int = 512) -> None:
        super().__init__()
        if dim < 2 or dim % 2:
            raise ValueError(f"dim must be an even number >= 2, got {dim}")
        if max_len < 1:
            raise ValueError(f"max_len must be >= 1, got {max_len}")
        self.dim = dim
        self.max_len = max_len
        # Built once, in float64 on the CPU (exact to ~1e-16), stored as float32. The angle p * w reaches
        # max_len radians: computed in float32 it would already be off by about max_len * 6e-8.
        position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
        frequency = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64) * (-math.log(10000.0) / dim))
        angle = position * frequency  # (max_len, dim / 2)
        pe = torch.stack((angle.sin(), angle.cos()), dim=-1).flatten(1)  # interleaved: sin, cos, sin, ...
        # A buffer follows .to() and .double(); persistent=False keeps it out of state_dict (it is derived,
        # not learned, and a checkpoint need not carry it).
        self.register_buffer("pe", pe.float(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Shapes are plain Python ints: these tests never touch the device, so they never synchronise.
        if x.dim() != 3:
            raise ValueError(f"expected x of shape (batch, seq, dim), got {x.dim()} dims: {tuple(x.shape)}")
        seq, dim = x.shape[1], x.shape[2]
        if dim != self.dim:
            raise ValueError(f"expected the last dim of x to be {self.dim}, got {dim}")
        if seq > self.pe.shape[0]:
            raise ValueError(f"sequence length {seq} exceeds max_len {self.pe.shape[0]}")
        # pe already lives where the module lives; slicing makes a view, .to(x.dtype) a cast on that device.
        return x + self.pe[:seq].to(x.dtype)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, max_len={self.max_len}"


def find_max_batch_size(try_batch: Callable[[int], Any], *, start: int = 1, limit: int = 4096) -> int:
    """The largest batch size in ``[start, limit]`` for which ``try_batch`` does not run out of memory."""
    if start < 1:
        raise ValueError(f"start must be >= 1, got {start}")
    if limit < start:
        raise ValueError(f"limit must be >= start, got limit={limit} < start={start}")

    def fits(size: int) -> bool:
        try:
            try_batch(size)
        except torch.OutOfMemoryError:
            out_of_memory = True  # the exception (and its traceback's frames) die with this block
        else:
            return True
        if out_of_memory and torch.cuda.is_available():
            torch.cuda.empty_cache()  # hand the cached blocks back only once nothing refers to them
        return False

    # Grow: start, 2·start, 4·start, ..., with limit standing in for the first size past it.
    lo, size = None, start
    while True:
        if not fits(size):
            hi = size
            break
        lo = size
        if size == limit:
            return limit
        size = min(2 * size, limit)
    if lo is None:
        raise RuntimeError(f"even the smallest batch size, {start}, does not fit in memory")
    # Bisect the open interval (lo, hi): lo always fits, hi never does.
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo
