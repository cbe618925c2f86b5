"""Bug: adds the bias to the gate g only, forgetting the first half a."""
import torch
from torch import nn

EXPECT_FAIL = {"forward_matches_glu": "added to the gate g only"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        template = nn.Linear(in_features, 2 * out_features, bias=bias)
        self.weight = template.weight
        self.bias = template.bias
        self.n = out_features

    def forward(self, x):
        h = x @ self.weight.T
        a, g = h[..., :self.n], h[..., self.n:]
        if self.bias is not None:
            g = g + self.bias[self.n:]
        return a * torch.sigmoid(g)
