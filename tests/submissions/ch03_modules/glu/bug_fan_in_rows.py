"""Bug: takes fan_in from the weight's row count (2 * out_features) instead of in_features."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"init_like_linear": "fan_in is in_features"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        bound = 1 / math.sqrt(2 * out_features)
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(2 * out_features).uniform_(-bound, bound)) if bias else None

    def forward(self, x):
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
