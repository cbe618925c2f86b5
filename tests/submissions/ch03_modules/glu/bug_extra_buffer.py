"""Bug: registers a helper tensor as a buffer, so state_dict() has a third key."""
import torch
from torch import nn

EXPECT_FAIL = {"state_dict_keys": "registered as buffers"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        lin = nn.Linear(in_features, 2 * out_features, bias=bias)
        self.weight, self.bias = lin.weight, lin.bias
        self.register_buffer("split_at", torch.tensor(out_features))

    def forward(self, x):
        h = nn.functional.linear(x, self.weight, self.bias)
        k = int(self.split_at)
        return h[..., :k] * torch.sigmoid(h[..., k:])
