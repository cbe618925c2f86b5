"""Bug: returns False on a mismatch but falls off the end (None) instead of returning True."""
EXPECT_FAIL = {"contiguous_layouts": "return True at the end, after the loop"}


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("length mismatch")
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
