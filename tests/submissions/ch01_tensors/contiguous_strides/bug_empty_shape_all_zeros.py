"""Bug: decides that a tensor with no elements has strides of all zeros."""
EXPECT_FAIL = {"size_zero_dims": "strides of all zeros"}


def contiguous_strides(shape):
    if 0 in shape:
        return tuple(0 for _ in shape)
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= size
    return tuple(strides)
