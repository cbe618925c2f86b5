"""Does nothing: stores dim and max_len, and forward returns x unchanged."""
from torch import nn

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        self.dim, self.max_len = dim, max_len

    def forward(self, x):
        return x
