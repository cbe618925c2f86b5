"""Does nothing: the body is just pass."""

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def average_gradients(model, group=None):
    pass
