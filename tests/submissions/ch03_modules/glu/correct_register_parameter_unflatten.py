"""Correct, written differently: register_parameter for both tensors, init via fan_in from the weight, unflatten + unbind."""
import math

import torch
from torch import nn


EXPECT_PASS = True


class GLU(nn.Module):
    def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
        super().__init__()
        self.out_features = out_features
        self.register_parameter("weight", nn.Parameter(torch.empty(2 * out_features, in_features)))
        self.register_parameter("bias", nn.Parameter(torch.empty(2 * out_features)) if bias else None)
        self._init()

    def _init(self):
        fan_in = self.weight.size(1)
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.uniform_(-bound, bound)

    def forward(self, x):
        h = nn.functional.linear(x, self.weight, self.bias)
        a, g = h.unflatten(-1, (2, self.out_features)).unbind(dim=-2)
        return torch.mul(a, torch.sigmoid(g))
