"""Bug: flattens with x.view(-1, in_features), which fails for a valid non-contiguous input (transposed, sliced)."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"any_leading_dims": "use x.reshape"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        k = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features).uniform_(-k, k))
        self.bias = nn.Parameter(torch.empty(2 * out_features).uniform_(-k, k)) if bias else None

    def forward(self, x):
        lead = x.shape[:-1]
        h = x.view(-1, self.in_features) @ self.weight.T
        if self.bias is not None:
            h = h + self.bias
        a, g = h.split(self.out_features, dim=1)
        return (a * torch.sigmoid(g)).view(*lead, self.out_features)
