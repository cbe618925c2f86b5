"""Bug: the row stride uses size instead of step (as if the windows never overlapped)."""
EXPECT_FAIL = {"contiguous_input": "uses size instead of step", "edge_sizes": "uses size instead of step"}

def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (size * x.stride(0), x.stride(0)), x.storage_offset())
