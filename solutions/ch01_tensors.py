"""Chapter 01 (tensors): reference solutions for contiguous_strides, is_contiguous, sliding_window."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Strides, in elements, of a new C-ordered tensor of ``shape`` (as ``torch.empty(shape).stride()``)."""
    strides = []
    step = 1
    for size in reversed(tuple(shape)):
        strides.append(step)
        step *= max(size, 1)  # PyTorch treats a size-0 dim as size 1 when laying out strides
    return tuple(reversed(strides))


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """PyTorch's contiguity rule for a view with this shape and these strides."""
    shape, strides = tuple(shape), tuple(strides)
    if len(shape) != len(strides):
        raise ValueError(f"shape has {len(shape)} dims but strides has {len(strides)}")
    if 0 in shape:
        return True  # no elements: nothing is laid out, so nothing can be out of place
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size == 1:
            continue  # a dim of size 1 is never stepped along, so its stride does not matter
        if stride != expected:
            return False
        expected *= size
    return True


def sliding_window(x: torch.Tensor, size: int, step: int = 1) -> torch.Tensor:
    """A view of 1-D ``x`` whose row i is ``x[i*step : i*step + size]`` (like ``x.unfold(0, size, step)``)."""
    if x.dim() != 1:
        raise ValueError(f"x must be 1-D, got a tensor of shape {tuple(x.shape)}")
    if size < 1 or step < 1:
        raise ValueError(f"size and step must be at least 1, got size={size}, step={step}")
    if size > len(x):
        raise ValueError(f"size {size} is larger than len(x) = {len(x)}")
    rows = (len(x) - size) // step + 1
    (element_stride,) = x.stride()
    return x.as_strided((rows, size), (step * element_stride, element_stride), x.storage_offset())


# The answers to the chapter's "predict, then run" prompts, worked out by hand (coursekit.practice uses them
# in the instructor's copy, so every build checks them against what the code gives).
PREDICTIONS = {
    "01.slice_step_layout": ((4, 2), 4),
    "01.which_share_storage": (True, True, True, False),
    "01.contiguous_size_one": (False, True),
    "01.broadcast_shape": (2, 3, 4),
    "01.dtype_sources": ("float64", "float32"),
}
