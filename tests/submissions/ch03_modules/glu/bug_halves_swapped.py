"""Bug: gates the wrong half: returns g * sigmoid(a) (the halves swapped)."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"forward_matches_glu": "halves are swapped", "any_leading_dims": "halves are swapped"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        self.bias = nn.Parameter(torch.empty(2 * out_features)) if bias else None
        bound = 1 / math.sqrt(in_features)
        nn.init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return g * torch.sigmoid(a)
