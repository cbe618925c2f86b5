"""Bug: raises ValueError for a 0-d shape (), whose empty shape and strides have equal lengths."""
EXPECT_FAIL = {"empty_and_scalar": "ValueError is for len(shape) != len(strides) only"}


def is_contiguous(shape, strides):
    if not shape or len(shape) != len(strides):
        raise ValueError("need one stride per dim, and at least one dim")
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True
