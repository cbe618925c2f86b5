"""Correct, written differently: takes a throwaway nn.Linear's Parameter objects themselves, halves with narrow()."""
import torch
from torch import nn

EXPECT_PASS = True


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        lin = nn.Linear(in_features, 2 * out_features, bias=bias)
        self.weight = lin.weight     # the same Parameter object, now registered here
        self.bias = lin.bias         # None when bias=False
        self.n = out_features

    def forward(self, x):
        h = torch.nn.functional.linear(x, self.weight, self.bias)
        return h.narrow(-1, 0, self.n) * torch.sigmoid(h.narrow(-1, self.n, self.n))
