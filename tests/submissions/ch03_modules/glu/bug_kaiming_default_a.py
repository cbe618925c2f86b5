"""Bug: kaiming_uniform_ with its default a=0 (bound sqrt(6/fan_in)), not nn.Linear's a=sqrt(5)."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"init_like_linear": "default a=0"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        nn.init.kaiming_uniform_(self.weight)
        self.bias = nn.Parameter(torch.empty(2 * out_features)) if bias else None
        if self.bias is not None:
            nn.init.uniform_(self.bias, -1 / math.sqrt(in_features), 1 / math.sqrt(in_features))

    def forward(self, x):
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
