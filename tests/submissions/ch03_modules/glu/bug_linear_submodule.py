"""Bug: wraps an nn.Linear, so the Parameters are proj.weight / proj.bias, not GLU's own weight / bias."""
import torch
from torch import nn

EXPECT_FAIL = {"parameters_registered": "submodule", "state_dict_keys": "submodule"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.proj = nn.Linear(in_features, 2 * out_features, bias=bias)

    def forward(self, x):
        a, g = self.proj(x).chunk(2, dim=-1)
        return a * torch.sigmoid(g)
