"""Bug: with bias=False never defines self.bias at all (forward checks hasattr)."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"no_bias": "has no attribute `bias`"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        r = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features).uniform_(-r, r))
        if bias:
            self.bias = nn.Parameter(torch.empty(2 * out_features).uniform_(-r, r))

    def forward(self, x):
        h = x @ self.weight.T
        if hasattr(self, "bias"):
            h = h + self.bias
        a, g = h.chunk(2, dim=-1)
        return a * torch.sigmoid(g)
