"""Bug: right weight init, but the bias starts at zeros (nn.Linear draws it uniform too)."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"init_like_linear": "all zeros"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        self.bias = nn.Parameter(torch.zeros(2 * out_features)) if bias else None

    def forward(self, x):
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
