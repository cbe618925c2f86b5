"""Correct, written differently: leaves out the storage offset (as_strided keeps x's own by default)."""
EXPECT_PASS = True


def sliding_window(x, size, step=1):
    if len(x.shape) != 1:
        raise ValueError("x must be 1-D")
    if not (1 <= size <= len(x)) or step < 1:
        raise ValueError("need 1 <= size <= len(x) and step >= 1")
    n = (len(x) - size) // step + 1
    return x.as_strided((n, size), (x.stride(0) * step, x.stride(0)))
