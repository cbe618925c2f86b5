"""Does nothing useful: returns the strides it was given."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def is_contiguous(shape, strides):
    return strides
