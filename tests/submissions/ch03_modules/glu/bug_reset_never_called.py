"""Bug: defines reset_parameters() but __init__ never calls it, so the zero placeholders stay."""
import math
import torch
import torch.nn.functional as F
from torch import nn

EXPECT_FAIL = {"init_like_linear": "never calls it"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(2 * out_features, in_features))
        if bias:
            self.bias = nn.Parameter(torch.zeros(2 * out_features))
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self):
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            nn.init.uniform_(self.bias, -1 / math.sqrt(self.weight.shape[1]), 1 / math.sqrt(self.weight.shape[1]))

    def forward(self, x):
        return F.glu(F.linear(x, self.weight, self.bias), dim=-1)
