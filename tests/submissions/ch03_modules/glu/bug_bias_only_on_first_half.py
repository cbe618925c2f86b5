"""Bug: adds the bias to the first half a only, forgetting the gate's half."""
import math
import torch
from torch import nn

EXPECT_FAIL = {"forward_matches_glu": "added to the first half a only"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.o = out_features
        b = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features).uniform_(-b, b))
        self.bias = nn.Parameter(torch.empty(2 * out_features).uniform_(-b, b)) if bias else None

    def forward(self, x):
        h = x @ self.weight.T
        a, g = h[..., :self.o], h[..., self.o:]
        if self.bias is not None:
            a = a + self.bias[:self.o]
        return a * torch.sigmoid(g)
