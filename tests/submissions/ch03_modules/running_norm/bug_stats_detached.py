"""Bug: computes the batch mean and variance under no_grad and normalises with them (no gradient through them)."""
import torch
from torch import nn

EXPECT_FAIL = {"input_gradient_matches_batchnorm": "batch mean and variance were detached"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        if not self.training:
            return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
        with torch.no_grad():
            mean, var = x.mean(0), x.var(0, unbiased=False)
            self.num_batches_tracked += 1
            m = 1 / self.num_batches_tracked.item() if self.momentum is None else self.momentum
            self.running_mean.lerp_(mean, m)
            self.running_var.lerp_(x.var(0), m)
        return (x - mean) / torch.sqrt(var + self.eps)
