"""Correct, written differently: recursion on shape[1:]."""
EXPECT_PASS = True

def contiguous_strides(shape):
    shape = tuple(shape)
    if len(shape) == 0:
        return ()
    rest = contiguous_strides(shape[1:])
    if not rest:
        return (1,)
    return (rest[0] * max(shape[1], 1),) + rest
