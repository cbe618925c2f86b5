"""Bug: registers the bias (initialised like nn.Linear) but forward never adds it."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"forward_matches_glu": "the bias was not added", "state_dict_keys": "the bias was not added"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        bound = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features).uniform_(-bound, bound))
        if bias:
            self.bias = nn.Parameter(torch.empty(2 * out_features).uniform_(-bound, bound))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        a, g = torch.matmul(x, self.weight.T).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
