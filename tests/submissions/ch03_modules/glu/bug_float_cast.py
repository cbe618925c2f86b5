"""Bug: casts the input to float32 in forward, so a .double() module cannot compute in float64."""
import torch
from torch import nn

EXPECT_FAIL = {"to_device_and_double": "fixed dtype"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        lin = nn.Linear(in_features, 2 * out_features, bias=bias)
        self.weight, self.bias = lin.weight, lin.bias

    def forward(self, x):
        a, g = nn.functional.linear(x.float(), self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
