"""Does nothing useful: returns a tuple of ones, one per dim."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def contiguous_strides(shape):
    return (1,) * len(shape)
