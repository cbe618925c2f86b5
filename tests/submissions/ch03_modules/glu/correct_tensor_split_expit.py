"""Correct, written differently: matmul then bias, tensor_split into two, torch.special.expit as the gate, bias=False via None."""
import math

import torch
from torch import nn

EXPECT_PASS = True


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        k = math.sqrt(1.0 / in_features)
        w = torch.rand(2 * out_features, in_features) * (2 * k) - k
        self.weight = nn.Parameter(w)
        self.bias = nn.Parameter(torch.rand(2 * out_features) * (2 * k) - k) if bias else None

    def forward(self, x):
        h = torch.matmul(x, self.weight.transpose(0, 1))
        if self.bias is not None:
            h += self.bias
        value, gate = torch.tensor_split(h, 2, dim=-1)
        return value * torch.special.expit(gate)
