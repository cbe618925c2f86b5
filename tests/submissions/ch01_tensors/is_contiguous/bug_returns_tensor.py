"""Bug: compares with tensors and returns the 0-d bool tensor from .all(), not a Python bool."""
EXPECT_FAIL = {"contiguous_layouts": "a tensor is not a bool"}

import torch
def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("len")
    if 0 in shape:
        return torch.tensor(True)
    want, z = [], 1
    for s in reversed(shape):
        want.insert(0, z); z *= max(s, 1)
    keep = [i for i, s in enumerate(shape) if s != 1]
    return (torch.tensor([strides[i] for i in keep], dtype=torch.long) == torch.tensor([want[i] for i in keep], dtype=torch.long)).all()
