"""Bug: decides that a tensor with no elements has strides of all ones."""
import math

EXPECT_FAIL = {"size_zero_dims": "strides of all ones"}


def contiguous_strides(shape):
    shape = tuple(shape)
    if 0 in shape:
        return (1,) * len(shape)
    return tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
