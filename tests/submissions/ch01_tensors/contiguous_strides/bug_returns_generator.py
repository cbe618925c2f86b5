"""Bug: parentheses around a comprehension make a generator, not a tuple."""
import math

EXPECT_FAIL = {"returns_tuple_of_ints": "generator expression"}


def contiguous_strides(shape):
    shape = list(shape)
    return (math.prod(max(s, 1) for s in shape[i + 1:]) for i in range(len(shape)))
