"""Bug: returns a list where a tuple is specified (the values are right)."""
EXPECT_FAIL = {"returns_tuple_of_ints": "return tuple(strides)"}


def contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= max(size, 1)
    return strides
