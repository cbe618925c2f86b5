"""Bug: divides the element count by each size in turn, which fails (ZeroDivisionError) for a size-0 dim."""
EXPECT_FAIL = {"size_zero_dims": "a division by a size"}

import math
def contiguous_strides(shape):
    total = math.prod(shape)
    out = []
    for s in shape:
        total //= s
        out.append(total)
    return tuple(out)
