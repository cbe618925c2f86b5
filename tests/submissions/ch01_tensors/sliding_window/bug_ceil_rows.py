"""Bug: rounds the window count up, so the last window runs past the end of x."""
import math

EXPECT_FAIL = {"contiguous_input": "past the end"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    rows = math.ceil((len(x) - size) / step) + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
