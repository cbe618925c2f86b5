"""Does nothing useful: returns False whatever the layout."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def is_contiguous(shape, strides):
    return False
