"""Bug: counts bytes of a float64 element (8) instead of elements."""
EXPECT_FAIL = {"ordinary_shapes": "8 times too large", "returns_tuple_of_ints": "not bytes"}


def contiguous_strides(shape):
    itemsize = 8  # float64
    strides, step = [], itemsize
    for size in reversed(shape):
        strides.insert(0, step)
        step *= max(size, 1)
    return tuple(strides)
