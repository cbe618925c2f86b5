"""Bug: momentum=None computes 1 / num_batches_tracked before incrementing it (1 / 0 at the first batch)."""
import torch
from torch import nn

EXPECT_FAIL = {"momentum_none_cumulative": "BEFORE incrementing"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        if self.training:
            mean, var = x.mean(0), x.var(0, unbiased=False)
            with torch.no_grad():
                f = 1.0 / self.num_batches_tracked if self.momentum is None else self.momentum
                self.running_mean.mul_(1 - f).add_(f * mean)
                self.running_var.mul_(1 - f).add_(f * x.var(0))
                self.num_batches_tracked += 1
            return (x - mean) / (var + self.eps).sqrt()
        return (x - self.running_mean) / (self.running_var + self.eps).sqrt()
