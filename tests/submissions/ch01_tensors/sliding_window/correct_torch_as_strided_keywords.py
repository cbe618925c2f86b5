"""Correct, written differently: torch.as_strided with keyword arguments and ceil-free arithmetic."""
import torch

EXPECT_PASS = True


def sliding_window(x, size, step=1):
    if x.ndim != 1 or size < 1 or step < 1 or size > x.numel():
        raise ValueError("bad arguments for sliding_window")
    count = 1 + (x.numel() - size) // step
    s = x.stride()[0]
    return torch.as_strided(x, size=(count, size), stride=(s * step, s), storage_offset=x.storage_offset())
