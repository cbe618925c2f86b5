"""Does nothing: the body is `pass`, so it returns None."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def move_to(obj, device, *, non_blocking=False):
    pass
