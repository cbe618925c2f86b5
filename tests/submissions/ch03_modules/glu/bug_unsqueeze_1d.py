"""Bug: turns a 1-D input into a batch of one and never removes that dim again."""
import torch
from torch import nn

EXPECT_FAIL = {"any_leading_dims": "never removed"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        lin = nn.Linear(in_features, 2 * out_features, bias=bias)
        self.weight, self.bias = lin.weight, lin.bias

    def forward(self, x):
        if x.dim() == 1:
            x = x.unsqueeze(0)
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
