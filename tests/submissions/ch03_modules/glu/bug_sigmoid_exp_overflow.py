"""Bug: the gate computed as exp(g) / (1 + exp(g)): inf / inf = nan once g passes about 88 (float32), which
saturating inputs reach; sigmoid (or 1 / (1 + exp(-g))) stays finite."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"generated_forward": "elements differ"}


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
        a, g = h.chunk(2, dim=-1)
        e = torch.exp(g)
        return a * (e / (1 + e))
