"""Does nothing useful: raises ValueError for every input."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def is_contiguous(shape, strides):
    raise ValueError("not written")
