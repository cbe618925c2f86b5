"""Bug: validates the argument as a list or tuple, so a range (a valid Sequence[int]) is refused."""
EXPECT_FAIL = {"any_sequence_and_random_shapes": "not for the same shape as a range"}


def contiguous_strides(shape):
    if not isinstance(shape, (list, tuple)):
        raise TypeError("shape must be a list or a tuple")
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= max(size, 1)
    return tuple(strides)
