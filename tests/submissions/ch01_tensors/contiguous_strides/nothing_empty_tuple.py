"""Does nothing useful: returns () for every shape."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def contiguous_strides(shape):
    return ()
