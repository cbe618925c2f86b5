"""Bug: validates with assert, which raises AssertionError instead of ValueError."""
EXPECT_FAIL = {"validation": "assert raises AssertionError"}


def sliding_window(x, size, step=1):
    assert x.dim() == 1, "x must be 1-D"
    assert 1 <= size <= len(x) and step >= 1, "bad size or step"
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
