"""Bug: keeps weight and bias as plain tensors (requires_grad=True) instead of nn.Parameters."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"parameters_registered": "not an nn.Parameter", "state_dict_keys": "not registered",
               "to_device_and_double": "plain tensor attribute"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        bound = 1 / math.sqrt(in_features)
        self.weight = torch.empty(2 * out_features, in_features).uniform_(-bound, bound).requires_grad_()
        self.bias = torch.empty(2 * out_features).uniform_(-bound, bound).requires_grad_() if bias else None

    def forward(self, x):
        h = x @ self.weight.T
        if self.bias is not None:
            h = h + self.bias
        a, g = h.chunk(2, dim=-1)
        return a * torch.sigmoid(g)
