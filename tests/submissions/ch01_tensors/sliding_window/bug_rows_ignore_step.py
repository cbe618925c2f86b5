"""Bug: counts the windows as if step were 1."""
EXPECT_FAIL = {"contiguous_input": "too many rows (7): the number of windows ignores step"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    rows = len(x) - size + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
