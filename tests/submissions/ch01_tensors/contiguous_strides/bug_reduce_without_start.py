"""Bug: functools.reduce with no start value fails on the empty product of the last dim."""
import functools
import operator

EXPECT_FAIL = {"ordinary_shapes": "reduce() of empty", "returns_tuple_of_ints": "contiguous_strides(shape=(2, 3)) failed"}


def contiguous_strides(shape):
    sizes = [max(s, 1) for s in shape]
    return tuple(functools.reduce(operator.mul, sizes[i + 1:]) for i in range(len(sizes)))
