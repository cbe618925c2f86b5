"""Bug: the init bound is 1/in_features instead of 1/sqrt(in_features)."""
import torch
import torch.nn.functional as F
from torch import nn

EXPECT_FAIL = {"init_like_linear": "square root is missing"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        bound = 1 / in_features
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(2 * out_features).uniform_(-bound, bound)) if bias else None

    def forward(self, x):
        return F.glu(F.linear(x, self.weight, self.bias), dim=-1)
