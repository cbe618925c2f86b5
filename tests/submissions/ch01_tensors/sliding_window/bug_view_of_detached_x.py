"""Bug: the windows are a view of x.detach() — the same storage, so writes reach x and every value and stride is
right — but x's graph is lost: for an x that requires grad, no gradient flows back (x.unfold's result has one)."""
EXPECT_FAIL = {"random_layouts_and_dtypes": "x requires grad and the result does not"}


def sliding_window(x, size, step=1):
    if x.dim() != 1:
        raise ValueError("x must be 1-D")
    if size < 1 or step < 1 or size > x.shape[0]:
        raise ValueError("size and step must be at least 1, and size at most len(x)")
    plain = x.detach()
    rows = (plain.shape[0] - size) // step + 1
    return plain.as_strided((rows, size), (step * plain.stride(0), plain.stride(0)), plain.storage_offset())
