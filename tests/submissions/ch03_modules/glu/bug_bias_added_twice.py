"""Bug: F.linear already adds the bias, and forward adds it again."""
import torch
import torch.nn.functional as F
from torch import nn

EXPECT_FAIL = {"forward_matches_glu": "added twice"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        lin = nn.Linear(in_features, 2 * out_features, bias=bias)
        self.weight, self.bias = lin.weight, lin.bias

    def forward(self, x):
        h = F.linear(x, self.weight, self.bias)
        if self.bias is not None:
            h = h + self.bias
        return F.glu(h, -1)
