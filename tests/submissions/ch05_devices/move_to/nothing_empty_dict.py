"""Does nothing: returns a new empty dict whatever it is given."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def move_to(obj, device, *, non_blocking=False):
    return {}
