"""Nothing done in forward: right parameters, forward returns zeros of the right shape (with a graph)."""
import torch
from torch import nn

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        lin = nn.Linear(in_features, 2 * out_features, bias=bias)
        self.weight, self.bias = lin.weight, lin.bias
        self.out_features = out_features

    def forward(self, x):
        return x[..., :1].expand(*x.shape[:-1], self.out_features) * 0 + self.weight.sum() * 0
