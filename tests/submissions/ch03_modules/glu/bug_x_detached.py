"""Bug: forward works on x.detach() (to "avoid touching the input"), so no gradient reaches x."""
import torch
from torch import nn

EXPECT_FAIL = {"gradients_reach_parameters": "x.grad is None"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        lin = nn.Linear(in_features, 2 * out_features, bias=bias)
        self.weight, self.bias = lin.weight, lin.bias

    def forward(self, x):
        x = x.detach()
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
