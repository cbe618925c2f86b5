"""Bug: ignores the bias argument, so GLU(..., bias=False) still has a learnable bias."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"no_bias": "the bias argument is ignored", "to_device_and_double": "yet it adds a bias"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        r = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features).uniform_(-r, r))
        self.bias = nn.Parameter(torch.empty(2 * out_features).uniform_(-r, r))

    def forward(self, x):
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
