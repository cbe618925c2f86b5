"""Bug: a bias of out_features entries shared by both halves, instead of 2 * out_features entries."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"parameters_registered": "the bias covers both halves"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        bound = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound)) if bias else None

    def forward(self, x):
        a, g = (x @ self.weight.T).chunk(2, dim=-1)
        if self.bias is not None:
            a, g = a + self.bias, g + self.bias
        return a * torch.sigmoid(g)
