"""Correct, written differently: slices the halves, draws uniform_(-bound, bound) itself, bias None by assignment."""
import math

import torch
from torch import nn

EXPECT_PASS = True


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.out_features = out_features
        bound = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features).uniform_(-bound, bound))
        if bias:
            self.bias = nn.Parameter(torch.empty(2 * out_features).uniform_(-bound, bound))
        else:
            self.bias = None

    def forward(self, x):
        h = x @ self.weight.T
        if self.bias is not None:
            h = h + self.bias
        a = h[..., : self.out_features]
        g = h[..., self.out_features:]
        return a * torch.sigmoid(g)
