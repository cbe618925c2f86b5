"""Bug: walks the dims with range(len(shape) - 1, 0, -1), which stops before dim 0."""
EXPECT_FAIL = {"non_contiguous_layouts": "dim 0 is never checked"}


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    if 0 in shape:
        return True
    expected = 1
    for i in range(len(shape) - 1, 0, -1):
        if shape[i] == 1:
            continue
        if strides[i] != expected:
            return False
        expected *= shape[i]
    return True
