"""Correct, written differently: sums by hand, E[x^2] - E[x]^2, in-place mul_/add_ under no_grad, rsqrt."""
import torch
from torch import nn

EXPECT_PASS = True


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        if not self.training:
            return (x - self.running_mean) * torch.rsqrt(self.running_var + self.eps)
        n = x.shape[0]
        mean = x.sum(dim=0) / n
        var = (x * x).sum(dim=0) / n - mean * mean
        with torch.no_grad():
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                w = 1.0 / self.num_batches_tracked.item()
            else:
                w = self.momentum
            self.running_mean.mul_(1 - w).add_(mean, alpha=w)
            self.running_var.mul_(1 - w).add_(var * (n / (n - 1)), alpha=w)
        return (x - mean) * torch.rsqrt(var + self.eps)
