"""Bug: xavier_uniform_ for both tensors (Glorot's bound uses fan_in + fan_out), not nn.Linear's init."""
import torch
import torch.nn.functional as F
from torch import nn

EXPECT_FAIL = {"init_like_linear": "xavier_uniform_"}


class GLU(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        nn.init.xavier_uniform_(self.weight)
        if bias:
            b = torch.empty(1, 2 * out_features)
            nn.init.xavier_uniform_(b)
            self.bias = nn.Parameter(b.squeeze(0))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.glu(F.linear(x, self.weight, self.bias), dim=-1)
