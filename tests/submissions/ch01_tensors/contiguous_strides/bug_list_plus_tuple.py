"""Bug: appends with `shape[1:] + (1,)`, which only works when shape is a tuple (a list or a range raises TypeError)."""
EXPECT_FAIL = {"returns_tuple_of_ints": "convert it first with shape = tuple(shape)",
               "any_sequence_and_random_shapes": "not for the same shape as a list"}


def contiguous_strides(shape):
    after = shape[1:] + (1,)          # the size after each dim; 1 after the last
    strides, step = [], 1
    for size in reversed(after):
        step *= max(size, 1)
        strides.insert(0, step)
    return tuple(strides)
