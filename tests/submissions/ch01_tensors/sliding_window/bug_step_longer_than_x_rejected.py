"""Bug: rejects a step longer than x, which is valid (it gives a single window)."""
EXPECT_FAIL = {"edge_sizes": "these arguments are valid"}

def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x) or step > len(x):
        raise ValueError("bad arguments")
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
