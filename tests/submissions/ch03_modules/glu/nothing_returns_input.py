"""Nothing done in forward: parameters registered and initialised right, but forward returns x."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if bias:
            self.bias = nn.Parameter(torch.empty(2 * out_features).uniform_(-1 / math.sqrt(in_features),
                                                                             1 / math.sqrt(in_features)))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return x
