"""Bug: kaiming_uniform_ with a=1 (bound sqrt(3/fan_in)) instead of nn.Linear's a=sqrt(5)."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"init_like_linear": "a=1"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.out_features = out_features
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        nn.init.kaiming_uniform_(self.weight, a=1)
        if bias:
            self.bias = nn.Parameter(torch.empty(2 * out_features))
            bound = math.sqrt(3 / in_features)
            nn.init.uniform_(self.bias, -bound, bound)
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        h = nn.functional.linear(x, self.weight, self.bias)
        return h[..., :self.out_features] * torch.sigmoid(h[..., self.out_features:])
