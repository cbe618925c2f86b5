"""Correct, written differently: math.prod of the clamped sizes after each dim, returned as a torch.Size
(a tuple; building a Size creates no tensor)."""
import math

import torch

EXPECT_PASS = True


def contiguous_strides(shape):
    sizes = [max(int(s), 1) for s in shape]
    return torch.Size(math.prod(sizes[i + 1:]) for i in range(len(sizes)))
