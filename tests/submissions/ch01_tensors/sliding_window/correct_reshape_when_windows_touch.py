"""Correct, written differently: when the windows touch (step == size) it cuts x into rows with reshape, which
for a 1-D x (of any stride) only splits its one dim, so it is still a view; otherwise as_strided."""
EXPECT_PASS = True


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    rows = (len(x) - size) // step + 1
    if step == size:
        return x[: rows * size].reshape(rows, size)
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
