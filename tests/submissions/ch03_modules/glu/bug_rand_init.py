"""Bug: draws the initial values with torch.rand (uniform in [0, 1)) scaled by the bound, never negative."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"init_like_linear": "every value is >= 0"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        scale = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.rand(2 * out_features, in_features) * scale)
        self.bias = nn.Parameter(torch.rand(2 * out_features) * scale) if bias else None

    def forward(self, x):
        a, g = torch.nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
