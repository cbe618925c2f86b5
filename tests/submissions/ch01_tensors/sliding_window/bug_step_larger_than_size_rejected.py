"""Bug: rejects a step larger than size (windows that skip elements are valid)."""
EXPECT_FAIL = {"edge_sizes": "a step longer than size skips elements"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x) or step > size:
        raise ValueError("step must not exceed size")
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
