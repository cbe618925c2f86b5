"""Does nothing useful: checks the lengths, then returns True."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("lengths differ")
    return True
