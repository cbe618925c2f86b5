"""Bug: no length check, so zip() quietly drops the extra sizes or strides."""
EXPECT_FAIL = {"length_mismatch_raises": "zip()"}


def is_contiguous(shape, strides):
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True
