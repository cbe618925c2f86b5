"""Bug: builds the strides from the last dim but forgets to reverse them back."""
EXPECT_FAIL = {"ordinary_shapes": "reverse order"}


def contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(strides)
