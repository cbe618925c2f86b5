"""Does nothing: returns the model untouched, without any communication."""

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def average_gradients(model, group=None):
    return model
