"""Correct, written differently: vectorised with numpy; returns a numpy bool (numpy.bool in numpy 2)."""
EXPECT_PASS = True

import numpy as np
def is_contiguous(shape, strides):
    shape, strides = np.asarray(shape, dtype=np.int64), np.asarray(strides, dtype=np.int64)
    if shape.shape != strides.shape:
        raise ValueError("shape and strides must have the same length")
    if (shape == 0).any():
        return True
    keep = shape != 1
    s, st = shape[keep], strides[keep]
    expected = np.cumprod(np.concatenate([[1], s[::-1][:-1]]))[::-1] if s.size else s
    return np.all(st == expected)   # a numpy bool
