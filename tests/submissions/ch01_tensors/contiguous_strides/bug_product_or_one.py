"""Bug: replaces a zero product by 1 afterwards, instead of counting a size-0 dim as 1 inside the product."""
EXPECT_FAIL = {"size_zero_dims": "INSIDE the product"}

import math
def contiguous_strides(shape):
    shape = tuple(shape)
    return tuple(math.prod(shape[i + 1:]) or 1 for i in range(len(shape)))
