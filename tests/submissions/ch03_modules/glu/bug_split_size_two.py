"""Bug: h.split(2, dim=-1) makes pieces of size 2, not two halves."""
import math
import torch
import torch.nn.functional as F
from torch import nn

EXPECT_FAIL = {"forward_matches_glu": "pieces of size 2"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        self.bias = nn.Parameter(torch.empty(2 * out_features)) if bias else None
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if bias:
            nn.init.uniform_(self.bias, -1 / math.sqrt(in_features), 1 / math.sqrt(in_features))

    def forward(self, x):
        h = F.linear(x, self.weight, self.bias)
        a, g = h.split(2, dim=-1)
        return a * torch.sigmoid(g)
