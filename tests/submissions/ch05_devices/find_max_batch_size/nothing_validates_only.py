"""Does nothing: validates start and limit, then returns start without trying any batch size."""

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1 or limit < start:
        raise ValueError("need 1 <= start <= limit")
    return start
