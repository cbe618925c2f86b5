"""Allocates 4 GiB on every call (and would answer correctly if it could)."""
import torch

EXPECT = {"score": 0, "words": "ran out of memory"}


def is_contiguous(shape, strides):
    block = torch.ones(2**30, dtype=torch.float32)  # 4 GiB
    return bool(block[0] == 1) and len(shape) == len(strides)
