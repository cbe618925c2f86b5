"""Does nothing: tries start once and returns it."""

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    try_batch(start)
    return start
