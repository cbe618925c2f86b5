"""Bug: assigns the Parameters before calling super().__init__()."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"parameters_registered": "call super().__init__() first", "forward_matches_glu": "call super().__init__() first"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        bound = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(2 * out_features).uniform_(-bound, bound)) if bias else None
        super().__init__()

    def forward(self, x):
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
