"""Correct, written differently: borrows a throwaway nn.Linear's initial values, and gates with F.glu."""
import torch
import torch.nn.functional as F
from torch import nn

EXPECT_PASS = True


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        template = nn.Linear(in_features, 2 * out_features, bias=bias)  # a local, so not a submodule
        self.weight = nn.Parameter(template.weight.detach().clone())
        if bias:
            self.bias = nn.Parameter(template.bias.detach().clone())
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.glu(F.linear(x, self.weight, self.bias))
