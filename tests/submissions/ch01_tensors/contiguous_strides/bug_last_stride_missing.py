"""Bug: the loop over the dims stops one short, so the last dim gets no stride."""
import math

EXPECT_FAIL = {"ordinary_shapes": "one stride per dim: 1 for this shape, and you returned 0"}


def contiguous_strides(shape):
    shape = list(shape)
    return tuple(math.prod(max(s, 1) for s in shape[i + 1:]) for i in range(len(shape) - 1))
