"""Bug: divides the element count with '/', so the strides come out as floats."""
import math

EXPECT_FAIL = {"returns_tuple_of_ints": "every stride is a float: '/' always gives a float"}


def contiguous_strides(shape):
    total = math.prod(max(s, 1) for s in shape)
    strides, seen = [], 1
    for size in shape:
        seen *= max(size, 1)
        strides.append(total / seen)
    return tuple(strides)
