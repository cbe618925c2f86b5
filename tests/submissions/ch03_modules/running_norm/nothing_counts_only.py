"""Nothing done but counting: buffers registered, num_batches_tracked incremented, forward returns x."""
import torch
from torch import nn

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        if self.training:
            self.num_batches_tracked += 1
        return x.clone()
