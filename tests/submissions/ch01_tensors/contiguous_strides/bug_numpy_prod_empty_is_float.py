"""Bug: numpy.prod of the empty tail (the last dim) is 1.0, a float, so the last stride is not an int."""
EXPECT_FAIL = {"returns_tuple_of_ints": "numpy.prod of an empty list", "ordinary_shapes": "numpy.prod of an empty list"}

import numpy as np
def contiguous_strides(shape):
    shape = [max(s, 1) for s in shape]
    return tuple(np.prod(shape[i + 1:]) for i in range(len(shape)))
