"""Bug: numpy products in int32 (numpy's default int on Windows), which overflow for large shapes."""
import numpy as np

EXPECT_FAIL = {"pure_python": "overflowed 32-bit"}


def contiguous_strides(shape):
    sizes = np.maximum(np.array(list(shape), dtype=np.int32), 1)
    strides = np.ones(len(sizes), dtype=np.int32)
    for i in range(len(sizes) - 2, -1, -1):
        strides[i] = strides[i + 1] * sizes[i + 1]
    return tuple(strides)
