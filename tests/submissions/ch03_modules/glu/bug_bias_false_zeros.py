"""Bug: bias=False gives a frozen zero bias instead of registering None."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"no_bias": "must be None"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        bound = 1 / math.sqrt(in_features)
        if bias:
            self.bias = nn.Parameter(torch.empty(2 * out_features).uniform_(-bound, bound))
        else:
            self.bias = nn.Parameter(torch.zeros(2 * out_features), requires_grad=False)

    def forward(self, x):
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
