"""Bug: multiplies by the raw size, so a size-0 dim zeroes every stride before it."""
import math

EXPECT_FAIL = {"size_zero_dims": "size-0 dim zeroes"}


def contiguous_strides(shape):
    shape = tuple(shape)
    return tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
