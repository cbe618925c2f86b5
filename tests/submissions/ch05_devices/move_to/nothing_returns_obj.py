"""Does nothing: returns obj unchanged, every tensor left where it was."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def move_to(obj, device, *, non_blocking=False):
    return obj
