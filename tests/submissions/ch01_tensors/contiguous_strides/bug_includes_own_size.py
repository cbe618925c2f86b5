"""Bug: stride[i] multiplies the sizes from dim i on, instead of the sizes after dim i."""
import math

EXPECT_FAIL = {"ordinary_shapes": "off by one dim"}


def contiguous_strides(shape):
    return tuple(math.prod(max(s, 1) for s in shape[i:]) for i in range(len(shape)))
