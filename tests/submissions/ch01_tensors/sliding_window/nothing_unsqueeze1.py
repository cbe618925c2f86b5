"""Does nothing useful: returns x.unsqueeze(1), windows of size 1."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def sliding_window(x, size, step=1):
    return x.unsqueeze(1)
