"""Correct, written differently: numpy cumprod of the clamped sizes; the tuple holds numpy int64 values."""
EXPECT_PASS = True

import numpy as np
def contiguous_strides(shape):
    sizes = np.maximum(np.array(list(shape), dtype=np.int64), 1)
    if sizes.size == 0:
        return ()
    rev = np.cumprod(np.concatenate([[1], sizes[::-1][:-1]]))
    return tuple(rev[::-1])   # numpy int64 entries
