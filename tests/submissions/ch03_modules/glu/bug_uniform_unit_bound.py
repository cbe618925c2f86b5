"""Bug: uniform in [-1, 1] for every size, forgetting to scale the bound by 1/sqrt(in_features)."""
import torch
from torch import nn

EXPECT_FAIL = {"init_like_linear": "uniform in [-1, 1]"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features).uniform_(-1, 1))
        self.bias = nn.Parameter(torch.empty(2 * out_features).uniform_(-1, 1)) if bias else None

    def forward(self, x):
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
