"""Correct, written differently: momentum=None factor as a tensor 1.0 / num_batches_tracked, mul_/add_ in place, rsqrt."""
import torch
from torch import nn

EXPECT_PASS = True


class RunningNorm(nn.Module):
    """momentum None: factor is a tensor 1 / num_batches_tracked (true division of an int64 tensor)."""
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        if not self.training:
            mean, var = self.running_mean, self.running_var
        else:
            mean = x.mean(0)
            var = x.var(0, unbiased=False)
            with torch.no_grad():
                self.num_batches_tracked.add_(1)
                factor = 1.0 / self.num_batches_tracked if self.momentum is None else self.momentum
                self.running_mean.mul_(1 - factor).add_(factor * mean)
                self.running_var.mul_(1 - factor).add_(factor * x.var(0, unbiased=True))
        return (x - mean) * torch.rsqrt(var + self.eps)
