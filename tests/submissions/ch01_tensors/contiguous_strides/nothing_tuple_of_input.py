"""Does nothing useful: returns tuple(shape)."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def contiguous_strides(shape):
    return tuple(shape)
