"""Correct, written differently: flattens the leading dims, addmm, split(out_features), restores the shape."""
import math
import torch
from torch import nn

EXPECT_PASS = True


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        if bias:
            self.bias = nn.Parameter(torch.empty(2 * out_features))
        else:
            self.register_parameter("bias", None)
        bound = 1 / math.sqrt(in_features)
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.uniform_(-bound, bound)

    def forward(self, x):
        lead = x.shape[:-1]
        flat = x.reshape(-1, self.in_features)
        if self.bias is not None:
            h = torch.addmm(self.bias, flat, self.weight.t())
        else:
            h = flat.mm(self.weight.t())
        a, g = h.split(self.out_features, dim=1)
        return (a * torch.sigmoid(g)).reshape(*lead, self.out_features)
