"""Bug: keepdim=True statistics assigned to the buffers, which become (1, C) after the first batch."""
import torch
from torch import nn

EXPECT_FAIL = {"train_matches_batchnorm": "keepdim=True"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        if self.training:
            mean = x.mean(0, keepdim=True)
            var = x.var(0, unbiased=False, keepdim=True)
            m = 1.0 / (self.num_batches_tracked.item() + 1) if self.momentum is None else self.momentum
            self.num_batches_tracked += 1
            self.running_mean = (1 - m) * self.running_mean + m * mean.detach()
            self.running_var = (1 - m) * self.running_var + m * x.var(0, keepdim=True).detach()
            return (x - mean) / (var + self.eps).sqrt()
        return (x - self.running_mean) / (self.running_var + self.eps).sqrt()
