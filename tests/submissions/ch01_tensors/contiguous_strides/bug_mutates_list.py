"""Bug: copies the shape only when it is not already a list, then reverses the caller's list in place."""
EXPECT_FAIL = {"returns_tuple_of_ints": "changed the list it was given"}


def contiguous_strides(shape):
    sizes = shape if isinstance(shape, list) else list(shape)
    sizes.reverse()
    strides, step = [], 1
    for size in sizes:
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))
