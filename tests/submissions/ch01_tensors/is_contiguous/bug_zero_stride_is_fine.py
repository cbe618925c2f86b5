"""Bug: treats an expanded (stride-0) dim like a size-1 dim and skips it."""
EXPECT_FAIL = {"non_contiguous_layouts": "an expanded dim (stride 0, size > 1)"}


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("length mismatch")
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size == 1 or stride == 0:
            continue
        if stride != expected:
            return False
        expected *= size
    return True
