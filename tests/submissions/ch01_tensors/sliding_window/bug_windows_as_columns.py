"""Bug: puts the windows in the columns, shape (size, number of windows)."""
EXPECT_FAIL = {"contiguous_input": "the shape is swapped"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    rows = (len(x) - size) // step + 1
    return x.as_strided((size, rows), (x.stride(0), step * x.stride(0)), x.storage_offset())
