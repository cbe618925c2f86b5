"""Bug: the gate is treated like dropout, applied in training mode only; in eval mode forward returns a alone.
The spec's output a * sigmoid(g) does not depend on the mode."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"generated_forward": ".eval()"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        if bias:
            self.bias = nn.Parameter(torch.empty(2 * out_features))
        else:
            self.register_parameter("bias", None)
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            nn.init.uniform_(self.bias, -1 / math.sqrt(in_features), 1 / math.sqrt(in_features))

    def forward(self, x):
        a, g = nn.functional.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * torch.sigmoid(g) if self.training else a
