"""Bug: column-major (Fortran) thinking: stride[i] is the product of the sizes BEFORE dim i."""
EXPECT_FAIL = {"ordinary_shapes": "column-major (Fortran)"}

import math
def contiguous_strides(shape):
    # column-major thinking: stride is product of sizes BEFORE the dim
    return tuple(math.prod(max(s, 1) for s in shape[:i]) for i in range(len(shape)))
