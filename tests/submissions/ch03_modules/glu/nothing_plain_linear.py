"""Nothing done: nn.Linear(in, 2 * out) under the name GLU, never gated."""
from torch import nn

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


class GLU(nn.Linear):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__(in_features, 2 * out_features, bias=bias)
