"""Bug: the windows are a new tensor pointed at x's storage with set_() — no copy, every value and stride right —
but a tensor made that way has no graph: for an x that requires grad, no gradient reaches x."""
EXPECT_FAIL = {"random_layouts_and_dtypes": "x requires grad and the result does not"}

import torch


def sliding_window(x, size, step=1):
    if x.dim() != 1:
        raise ValueError("x must be 1-D")
    if size < 1 or step < 1 or size > len(x):
        raise ValueError("size and step must be at least 1, and size at most len(x)")
    rows = (len(x) - size) // step + 1
    out = torch.empty(0, dtype=x.dtype, device=x.device)
    with torch.no_grad():
        out.set_(x.untyped_storage(), x.storage_offset(), (rows, size), (step * x.stride(0), x.stride(0)))
    return out
