"""Bug: the shortcut for an empty tensor returns True before the lengths of shape and strides are compared."""
EXPECT_FAIL = {"length_mismatch_raises": "before the lengths were compared"}

def is_contiguous(shape, strides):
    if 0 in shape:
        return True
    if len(shape) != len(strides):
        raise ValueError("length mismatch")
    z = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != z:
                return False
            z *= size
    return True
