"""Bug: passes storage offset 0, so a view of base[k:] starts at base[0]."""
EXPECT_FAIL = {"storage_offset": "storage offset was ignored"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), 0)
