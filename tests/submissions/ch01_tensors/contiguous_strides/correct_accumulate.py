"""Correct, written differently: suffix products with itertools.accumulate."""
from itertools import accumulate

EXPECT_PASS = True


def contiguous_strides(shape):
    if len(shape) == 0:
        return ()
    sizes = [max(int(s), 1) for s in shape][::-1]
    suffix = list(accumulate([1] + sizes[:-1], lambda a, b: a * b))
    return tuple(suffix[::-1])
