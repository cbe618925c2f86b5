"""Bug: assumes x is contiguous and uses strides (step, 1)."""
EXPECT_FAIL = {"strided_input": "own stride was ignored"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step, 1), x.storage_offset())
