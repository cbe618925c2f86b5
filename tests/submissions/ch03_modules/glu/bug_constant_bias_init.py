"""Bug: a constant bias (0.01 everywhere) instead of nn.Linear's uniform draw."""
import math
import torch
from torch import nn

EXPECT_FAIL = {"init_like_linear": "constant initialisation"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        self.bias = nn.Parameter(torch.full((2 * out_features,), 0.01)) if bias else None

    def forward(self, x):
        return nn.functional.glu(nn.functional.linear(x, self.weight, self.bias))
