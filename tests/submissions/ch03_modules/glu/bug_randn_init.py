"""Bug: initialises with torch.randn (std 1) instead of nn.Linear's uniform(+-1/sqrt(in_features))."""
import torch
from torch import nn

EXPECT_FAIL = {"init_like_linear": "torch.randn"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(2 * out_features, in_features))
        self.bias = nn.Parameter(torch.randn(2 * out_features)) if bias else None

    def forward(self, x):
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
