"""Bug: turns a range into a list by its start and stop only, so a range with a step other than 1 (range(2, 9, 3),
range(3, 0, -1)) becomes another shape; every hand-written range has step 1, only generated ones show it."""
EXPECT_FAIL = {"any_sequence_and_random_shapes": "but not for the same shape as a range"}


def contiguous_strides(shape):
    if isinstance(shape, range):
        shape = list(range(shape.start, shape.stop))
    strides = []
    step = 1
    for size in reversed(list(shape)):
        strides.insert(0, step)
        step *= max(size, 1)
    return tuple(strides)
