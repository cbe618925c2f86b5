"""Bug: checks the lengths with assert, which raises AssertionError instead of ValueError."""
EXPECT_FAIL = {"length_mismatch_raises": "assert raises AssertionError"}

def is_contiguous(shape, strides):
    assert len(shape) == len(strides), "length mismatch"
    if 0 in shape:
        return True
    z = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != z:
                return False
            z *= size
    return True
