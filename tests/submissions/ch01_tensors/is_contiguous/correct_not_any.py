"""Correct, written differently: `not any(...)` over (size, stride, wanted) triples built from the end."""
import itertools
import operator

EXPECT_PASS = True


def is_contiguous(shape, strides):
    shape, strides = tuple(shape), tuple(strides)
    if len(shape) != len(strides):
        raise ValueError(f"len(shape)={len(shape)} but len(strides)={len(strides)}")
    if not all(shape):
        return True
    wanted = list(itertools.accumulate((1,) + shape[:0:-1], operator.mul))[::-1]
    return not any(size > 1 and operator.ne(stride, want) for size, stride, want in zip(shape, strides, wanted))
