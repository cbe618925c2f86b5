"""Does nothing: returns limit without trying any batch size."""

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    return limit
