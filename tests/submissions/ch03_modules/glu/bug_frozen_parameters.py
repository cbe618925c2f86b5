"""Bug: creates the Parameters with requires_grad=False (frozen), so training never changes them."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"parameters_registered": "requires_grad=False"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        bound = 1 / math.sqrt(in_features)
        w = torch.empty(2 * out_features, in_features).uniform_(-bound, bound)
        self.weight = nn.Parameter(w, requires_grad=False)
        if bias:
            self.bias = nn.Parameter(torch.empty(2 * out_features).uniform_(-bound, bound), requires_grad=False)
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
