"""Does nothing useful: returns None."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def contiguous_strides(shape):
    return None
