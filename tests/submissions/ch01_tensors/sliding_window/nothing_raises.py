"""Does nothing useful: raises ValueError for every input."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def sliding_window(x, size, step=1):
    raise ValueError("not written")
