"""Bug: flattens the leading dims to a 2-D batch and forgets to restore them."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"any_leading_dims": "flattened and not restored"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features = in_features
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        self.bias = nn.Parameter(torch.empty(2 * out_features)) if bias else None
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            nn.init.uniform_(self.bias, -1 / math.sqrt(in_features), 1 / math.sqrt(in_features))

    def forward(self, x):
        x = x.reshape(-1, self.in_features)
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
