"""Bug: the constructor's parameters are renamed (d_in, d_out), so GLU(in_features=..., out_features=...), a call
the spec's signature allows, raises TypeError."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"generated_forward": "unexpected keyword argument"}


class GLU(nn.Module):
    def __init__(self, d_in, d_out, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(2 * d_out, d_in))
        if bias:
            self.bias = nn.Parameter(torch.empty(2 * d_out))
        else:
            self.register_parameter("bias", None)
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            nn.init.uniform_(self.bias, -1 / math.sqrt(d_in), 1 / math.sqrt(d_in))

    def forward(self, x):
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
