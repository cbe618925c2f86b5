"""Bug: clever, but still creates a tensor of that shape (on the meta device)."""
import torch

EXPECT_FAIL = {"pure_python": "pure Python"}


def contiguous_strides(shape):
    return torch.empty(tuple(shape), device="meta").stride()
