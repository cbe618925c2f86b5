"""Bug: computes the expected strides with numpy's int32, which wraps past 2**31: a layout whose sizes or strides
pass 2**31 is misjudged (every hand-written size and stride stays below 2**31; generated layouts go past it)."""
EXPECT_FAIL = {"random_layouts": "generated layouts failed; this is the smallest failing layout found"}

import numpy as np


def is_contiguous(shape, strides):
    shape, strides = list(shape), list(strides)
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    if 0 in shape:
        return True
    kept = [(n, s) for n, s in zip(shape, strides) if n != 1][::-1]
    sizes = np.array([n for n, _ in kept], dtype=np.int64).astype(np.int32)
    expected = np.concatenate([np.ones(1, dtype=np.int32), np.cumprod(sizes, dtype=np.int32)[:-1]])
    return all(int(e) == s for e, (_, s) in zip(expected, kept))
