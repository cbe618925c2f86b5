"""Bug: asks torch instead of computing (creates the very tensor the exercise forbids)."""
import torch

EXPECT_FAIL = {"pure_python": "pure Python"}


def contiguous_strides(shape):
    return torch.empty(tuple(shape)).stride()
