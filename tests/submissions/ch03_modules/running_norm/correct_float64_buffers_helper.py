"""Correct, written differently: float64 buffers from the start, a @torch.no_grad() helper, copy_ updates, correction=."""
import torch
from torch import nn

EXPECT_PASS = True


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features, dtype=torch.float64))
        self.register_buffer("running_var", torch.ones(num_features, dtype=torch.float64))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.int64))

    @torch.no_grad()
    def _update(self, mean, var_unbiased):
        self.num_batches_tracked += 1
        if self.momentum is None:
            w = 1.0 / float(self.num_batches_tracked)
        else:
            w = self.momentum
        self.running_mean.copy_((1 - w) * self.running_mean + w * mean)
        self.running_var.copy_((1 - w) * self.running_var + w * var_unbiased)

    def forward(self, x):
        if self.training:
            mean = x.mean(dim=0)
            var = x.var(dim=0, correction=0)
            self._update(mean, x.var(dim=0, correction=1))
        else:
            mean, var = self.running_mean.to(x.dtype), self.running_var.to(x.dtype)
        return (x - mean) / torch.sqrt(var + self.eps)
