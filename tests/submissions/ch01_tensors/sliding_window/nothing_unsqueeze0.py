"""Does nothing useful: returns x.unsqueeze(0), a single window of all of x."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def sliding_window(x, size, step=1):
    return x.unsqueeze(0)
