"""Bug: sigmoid(a * g) instead of a * sigmoid(g)."""
import torch
from torch import nn

EXPECT_FAIL = {"forward_matches_glu": "sigmoid was applied to the product"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        lin = nn.Linear(in_features, 2 * out_features, bias=bias)
        self.weight, self.bias = lin.weight, lin.bias

    def forward(self, x):
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return torch.sigmoid(a * g)
