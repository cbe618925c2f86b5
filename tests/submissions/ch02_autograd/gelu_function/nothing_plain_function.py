"""Do-nothing: GELUFunction is a plain function returning its input, not an autograd.Function."""
EXPECT_FAIL = {"*": "must be a class that subclasses torch.autograd.Function"}
EXPECT_SCORE = 0


def GELUFunction(x):
    return x
