"""Bug: no argument checks at all."""
EXPECT_FAIL = {"validation": "must raise ValueError"}


def sliding_window(x, size, step=1):
    rows = (x.shape[0] - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
