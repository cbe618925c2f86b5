"""Bug: compares ints with `is`, which only works for the small ints Python caches (-5 to 256)."""
EXPECT_FAIL = {"contiguous_layouts": "`is` compares object identity"}


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size == 1:
            continue
        if stride is not expected:
            return False
        expected *= size
    return True
