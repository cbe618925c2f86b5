"""Bug: walks from the first dim to the last (Fortran order)."""
EXPECT_FAIL = {"contiguous_layouts": "walk from the LAST"}


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("length mismatch")
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(shape, strides):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True
