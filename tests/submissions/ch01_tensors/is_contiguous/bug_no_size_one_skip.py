"""Bug: checks the stride of every dim, size-1 dims included."""
EXPECT_FAIL = {"size_one_dims_ignored": "size-1 dims must be skipped"}


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("length mismatch")
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if stride != expected:
            return False
        expected *= size
    return True
