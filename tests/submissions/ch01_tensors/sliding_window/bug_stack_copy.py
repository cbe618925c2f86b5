"""Bug: stacks slices, which gives the right values in new storage (a copy, not a view)."""
import torch

EXPECT_FAIL = {"is_a_view": "copy"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    rows = (len(x) - size) // step + 1
    return torch.stack([x[i * step: i * step + size] for i in range(rows)])
