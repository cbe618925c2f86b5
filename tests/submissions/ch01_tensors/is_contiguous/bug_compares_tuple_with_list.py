"""Bug: compares the strides with a tuple of wanted strides, which is never equal when strides is a list."""
EXPECT_FAIL = {"contiguous_layouts": "answers right for the same layout given as tuples"}


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    if 0 in shape:
        return True
    wanted, running = [], 1
    for size in reversed(shape):
        wanted.insert(0, running)
        running *= size
    # size-1 dims may have any stride: take theirs
    wanted = tuple(st if size == 1 else w for size, st, w in zip(shape, strides, wanted))
    return strides == wanted
