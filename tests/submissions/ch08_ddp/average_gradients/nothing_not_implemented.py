"""Does nothing: raises NotImplementedError."""

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def average_gradients(model, group=None):
    raise NotImplementedError
