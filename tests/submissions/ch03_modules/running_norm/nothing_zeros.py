"""Nothing done in forward: buffers registered right, forward returns zeros (with a graph) and updates nothing."""
import torch
from torch import nn

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        return x * 0
