"""Bug: decorates forward with @torch.no_grad(), so the output has no autograd history."""
import torch
import torch.nn.functional as F
from torch import nn

EXPECT_FAIL = {"gradients_reach_parameters": "no autograd history"}


class GLU(nn.Linear):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__(in_features, 2 * out_features, bias)

    @torch.no_grad()
    def forward(self, x):
        return F.glu(F.linear(x, self.weight, self.bias), dim=-1)
