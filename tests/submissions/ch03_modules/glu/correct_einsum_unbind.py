"""Correct, written differently: einsum over any leading dims, halves via view(..., 2, out).unbind(-2)."""
import math

import torch
from torch import nn

EXPECT_PASS = True


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        self.bias = nn.Parameter(torch.empty(2 * out_features)) if bias else None
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = nn.init._calculate_fan_in_and_fan_out(self.weight)
            nn.init.uniform_(self.bias, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))

    def forward(self, x):
        h = torch.einsum("...i,oi->...o", x, self.weight)
        if self.bias is not None:
            h = h + self.bias
        a, g = h.reshape(*h.shape[:-1], 2, self.out_features).unbind(-2)
        return a * g.sigmoid()
