"""Bug: believes that a tensor is contiguous when its last stride is 1."""
EXPECT_FAIL = {"non_contiguous_layouts": "looking only at the last stride"}


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    if not shape or 0 in shape:
        return True
    return strides[-1] == 1
