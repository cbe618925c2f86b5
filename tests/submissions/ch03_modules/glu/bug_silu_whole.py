"""Bug: gates the whole of h with its own sigmoid (SiLU), so the output keeps 2 * out_features features."""
import torch
from torch import nn

EXPECT_FAIL = {"forward_matches_glu": "2 * out_features features", "any_leading_dims": "2 * out_features features"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        lin = nn.Linear(in_features, 2 * out_features, bias=bias)
        self.weight, self.bias = lin.weight, lin.bias

    def forward(self, x):
        h = nn.functional.linear(x, self.weight, self.bias)
        return h * torch.sigmoid(h)
