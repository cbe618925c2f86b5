"""Bug: uses the in-place as_strided_, which turns the caller's x itself into the windows."""
EXPECT_FAIL = {"contiguous_input": "changed x itself", "is_a_view": "as_strided_()"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    rows = (len(x) - size) // step + 1
    return x.as_strided_((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
