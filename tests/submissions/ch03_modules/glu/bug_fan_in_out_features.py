"""Bug: the init bound is 1/sqrt(out_features) (fan_in mixed up with the number of output features)."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"init_like_linear": "the bound uses out_features"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        self.bias = nn.Parameter(torch.empty(2 * out_features)) if bias else None
        limit = 1.0 / math.sqrt(out_features)
        nn.init.uniform_(self.weight, -limit, limit)
        if self.bias is not None:
            nn.init.uniform_(self.bias, -limit, limit)

    def forward(self, x):
        h = x @ self.weight.t()
        if self.bias is not None:
            h = h + self.bias
        first, second = h.chunk(2, -1)
        return first * second.sigmoid()
