"""Bug: stores the weight as (in_features, 2 * out_features) and computes x @ weight."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"parameters_registered": "transposed"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        bound = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.empty(in_features, 2 * out_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(2 * out_features).uniform_(-bound, bound)) if bias else None

    def forward(self, x):
        h = x @ self.weight
        if self.bias is not None:
            h = h + self.bias
        a, g = h.chunk(2, dim=-1)
        return a * torch.sigmoid(g)
