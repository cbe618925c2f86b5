"""Correct, written differently: torch.Tensor(...) + uniform_ init, two F.linear calls on the weight's halves, a / (1 + exp(-g))."""
import math
import torch
import torch.nn.functional as F
from torch import nn

EXPECT_PASS = True


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.out_features = out_features
        self.weight = nn.Parameter(torch.Tensor(2 * out_features, in_features))
        self.bias = nn.Parameter(torch.Tensor(2 * out_features)) if bias else None
        b = 1 / math.sqrt(in_features)
        nn.init.uniform_(self.weight, -b, b)
        if self.bias is not None:
            nn.init.uniform_(self.bias, -b, b)

    def forward(self, x):
        o = self.out_features
        ba = self.bias[:o] if self.bias is not None else None
        bg = self.bias[o:] if self.bias is not None else None
        a = F.linear(x, self.weight[:o], ba)
        g = F.linear(x, self.weight[o:], bg)
        return a / (1 + torch.exp(-g))
