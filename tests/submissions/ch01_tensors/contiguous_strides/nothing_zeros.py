"""Does nothing useful: returns a tuple of zeros, one per dim."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def contiguous_strides(shape):
    return tuple(0 for _ in shape)
