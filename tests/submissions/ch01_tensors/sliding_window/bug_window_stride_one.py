"""Bug: the stride along a window is 1 instead of x.stride(0)."""
EXPECT_FAIL = {"strided_input": "the stride along a window is 1"}

def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), 1), x.storage_offset())
