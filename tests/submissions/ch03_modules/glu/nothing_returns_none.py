"""Nothing done in forward: right parameters, forward returns None."""
from torch import nn

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        lin = nn.Linear(in_features, 2 * out_features, bias=bias)
        self.weight, self.bias = lin.weight, lin.bias

    def forward(self, x):
        return None
