"""Does nothing useful: returns the shape it was given."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def contiguous_strides(shape):
    return shape
