"""Bug: multiplies the halves, forgetting to put the gate through sigmoid (a bilinear layer)."""
import torch
from torch import nn

EXPECT_FAIL = {"forward_matches_glu": "must go through sigmoid", "any_leading_dims": "must go through sigmoid"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        lin = nn.Linear(in_features, 2 * out_features, bias=bias)
        self.weight = nn.Parameter(lin.weight.detach().clone())
        self.bias = nn.Parameter(lin.bias.detach().clone()) if bias else None

    def forward(self, x):
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * g
