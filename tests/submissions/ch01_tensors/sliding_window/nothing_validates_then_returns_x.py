"""Does nothing useful: validates the arguments, then returns x unchanged."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    return x
