"""Bug: two (out_features, in_features) matrices, `weight` for a and `gate_weight` for g, instead of one weight."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"parameters_registered": "one weight holds both halves"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        bound = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        self.gate_weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        if bias:
            self.bias = nn.Parameter(torch.empty(2 * out_features).uniform_(-bound, bound))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        a = x @ self.weight.T
        g = x @ self.gate_weight.T
        if self.bias is not None:
            a_bias, g_bias = self.bias.chunk(2)
            a, g = a + a_bias, g + g_bias
        return a * torch.sigmoid(g)
