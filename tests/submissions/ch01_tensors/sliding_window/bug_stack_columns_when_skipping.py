"""Bug: when the windows skip elements (step > size) it stacks the columns x[j::step], a copy, not a view."""
import torch

EXPECT_FAIL = {"strided_input": "it is a copy, not a view of x", "edge_sizes": "it is a copy, not a view of x"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    rows = (len(x) - size) // step + 1
    if step > size:
        return torch.stack([x[j::step][:rows] for j in range(size)], dim=1)
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
