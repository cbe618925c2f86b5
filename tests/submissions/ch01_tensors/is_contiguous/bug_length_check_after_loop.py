"""Bug: compares the lengths only after the loop, which may already have returned False."""
EXPECT_FAIL = {"length_mismatch_raises": "comes too late"}


def is_contiguous(shape, strides):
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    return True
