"""Bug: flattens a multi-dimensional x instead of rejecting it."""
EXPECT_FAIL = {"validation": "must raise ValueError because x is 2-D"}


def sliding_window(x, size, step=1):
    if x.dim() != 1:
        x = x.reshape(-1)
    if size < 1 or step < 1 or size > len(x):
        raise ValueError("bad size or step")
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
