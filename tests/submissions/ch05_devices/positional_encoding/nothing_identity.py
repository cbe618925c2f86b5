"""Does nothing: nn.Identity under the name PositionalEncoding."""
from torch import nn

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


class PositionalEncoding(nn.Identity):
    def __init__(self, dim, max_len=512):
        super().__init__()
