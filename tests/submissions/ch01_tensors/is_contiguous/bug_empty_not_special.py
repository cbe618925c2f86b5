"""Bug: forgets that a tensor with no elements is always contiguous."""
EXPECT_FAIL = {"empty_and_scalar": "no elements"}


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("length mismatch")
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True
