"""Does nothing: forward returns None."""
from torch import nn

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()

    def forward(self, x):
        return None
