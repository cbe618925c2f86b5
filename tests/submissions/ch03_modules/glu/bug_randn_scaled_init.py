"""Bug: initialises with torch.randn / sqrt(in_features), a normal distribution, not nn.Linear's uniform one."""
import math
import torch
import torch.nn.functional as F
from torch import nn

EXPECT_FAIL = {"init_like_linear": "normal distribution"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(2 * out_features, in_features) / math.sqrt(in_features))
        self.bias = nn.Parameter(torch.randn(2 * out_features) / math.sqrt(in_features)) if bias else None

    def forward(self, x):
        return F.glu(F.linear(x, self.weight, self.bias), dim=-1)
