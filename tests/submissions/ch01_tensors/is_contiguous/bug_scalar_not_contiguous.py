"""Bug: decides that a 0-d shape () (nothing to walk) is not contiguous."""
EXPECT_FAIL = {"empty_and_scalar": "a scalar tensor is contiguous"}


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    if len(shape) == 0:
        return False
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True
