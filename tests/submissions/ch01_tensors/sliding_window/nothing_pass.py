"""Does nothing useful: the body is `pass` (returns None)."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def sliding_window(x, size, step=1):
    pass
