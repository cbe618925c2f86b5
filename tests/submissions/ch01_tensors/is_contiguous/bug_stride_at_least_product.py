"""Bug: accepts any stride at least as large as the product of the sizes after it (gaps pass)."""
EXPECT_FAIL = {"non_contiguous_layouts": "leaves gaps"}


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size == 1:
            continue
        if stride < expected:
            return False
        expected *= size
    return True
