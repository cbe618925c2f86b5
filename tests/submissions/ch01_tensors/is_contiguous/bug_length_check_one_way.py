"""Bug: the length check only catches a shape longer than strides (len(strides) < len(shape)); strides longer than
shape get past it, and zip() then silently drops the extra strides."""
EXPECT_FAIL = {"length_mismatch_raises": "catches only shape longer than strides"}


def is_contiguous(shape, strides):
    if len(strides) < len(shape):
        raise ValueError("not enough strides")
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True
