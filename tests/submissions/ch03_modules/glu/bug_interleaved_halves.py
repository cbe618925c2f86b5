"""Bug: takes a and g as every other feature (view(..., out, 2)) instead of the first and second halves."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"forward_matches_glu": "interleaved"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.out_features = out_features
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        self.bias = nn.Parameter(torch.empty(2 * out_features)) if bias else None
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            nn.init.uniform_(self.bias, -1 / math.sqrt(in_features), 1 / math.sqrt(in_features))

    def forward(self, x):
        h = nn.functional.linear(x, self.weight, self.bias)
        a, g = h.view(*h.shape[:-1], self.out_features, 2).unbind(-1)
        return a * torch.sigmoid(g)
