"""Bug: calls contiguous() first, which silently copies a strided x (right values, not a view)."""
EXPECT_FAIL = {"strided_input": "copy"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    x = x.contiguous()
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step, 1))
