"""Bug: tests `not size` / `not step`, which catches 0 but lets negative values through."""
EXPECT_FAIL = {"validation": "catches size == 0 but not a negative size"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or not size or not step or size > len(x):
        raise ValueError("bad arguments")
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
