"""Bug: forgets the +1 in the number of windows."""
EXPECT_FAIL = {"contiguous_input": "one row short"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    rows = (len(x) - size) // step
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
