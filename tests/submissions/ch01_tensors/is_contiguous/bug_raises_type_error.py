"""Bug: raises TypeError, not the ValueError the specification asks for, when the lengths differ."""
EXPECT_FAIL = {"length_mismatch_raises": "raise ValueError(...) there"}

def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise TypeError("length mismatch")
    if 0 in shape:
        return True
    z = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != z:
                return False
            z *= size
    return True
