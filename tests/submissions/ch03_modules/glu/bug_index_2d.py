"""Bug: indexes the features as h[:, ...], which assumes exactly one leading dim (fails for a 1-D input)."""
import torch
from torch import nn

EXPECT_FAIL = {"any_leading_dims": "index the feature dim from the end"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        lin = nn.Linear(in_features, 2 * out_features, bias=bias)
        self.weight, self.bias = lin.weight, lin.bias
        self.o = out_features

    def forward(self, x):
        h = nn.functional.linear(x, self.weight, self.bias)
        if h.dim() > 2:
            return h[..., :self.o] * torch.sigmoid(h[..., self.o:])
        return h[:, :self.o] * torch.sigmoid(h[:, self.o:])
