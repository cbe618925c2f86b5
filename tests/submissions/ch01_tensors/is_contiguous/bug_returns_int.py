"""Bug: returns 1 or 0 (the count of failures is 0) instead of True or False."""
EXPECT_FAIL = {"contiguous_layouts": "not a number"}


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    if 0 in shape:
        return 1
    bad, expected = 0, 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            bad += stride != expected
            expected *= size
    return int(bad == 0)
