"""Does nothing: forward returns zeros shaped like x."""
import torch
from torch import nn

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        self.dim, self.max_len = dim, max_len

    def forward(self, x):
        return torch.zeros_like(x)
