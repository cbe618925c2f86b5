"""Bug: special-cases the 0-d shape with `shape == ()`, which is False for an empty list or range(0)."""
EXPECT_FAIL = {"scalar_and_size_one_dims": "but not for the same shape as a list"}


def contiguous_strides(shape):
    if shape == ():
        return ()
    strides = [1]
    for size in reversed(shape[1:]):
        strides.insert(0, strides[0] * max(size, 1))
    return tuple(strides)
