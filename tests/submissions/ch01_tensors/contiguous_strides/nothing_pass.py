"""Does nothing useful: the body is `pass` (returns None)."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def contiguous_strides(shape):
    pass
