"""Bug: rejects size == len(x) (off by one: a single window covering all of x is valid)."""
EXPECT_FAIL = {"contiguous_input": "these arguments are valid", "validation": "these arguments are valid"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size >= len(x):
        raise ValueError("size must be smaller than len(x)")
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
