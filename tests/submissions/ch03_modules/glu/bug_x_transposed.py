"""Bug: (weight @ x.T).T works for 2-D input only; x.T reverses every dim of a 3-D input."""
import torch
from torch import nn

EXPECT_FAIL = {"any_leading_dims": "reverses EVERY dim"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        lin = nn.Linear(in_features, 2 * out_features, bias=bias)
        self.weight, self.bias = lin.weight, lin.bias
        self.o = out_features

    def forward(self, x):
        h = (self.weight @ x.T).T
        if self.bias is not None:
            h = h + self.bias
        return h[..., :self.o] * torch.sigmoid(h[..., self.o:])
