"""Bug: multiplies the running product by the stride instead of the size."""
EXPECT_FAIL = {"contiguous_layouts": "input:    shape=(2, 3), strides=(3, 1)"}


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != expected:
                return False
            expected *= stride
    return True
