"""Correct, written differently: torch.var_mean, and buffers replaced by detached new tensors (still buffers)."""
import torch
from torch import nn

EXPECT_PASS = True


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0))

    def forward(self, x):
        if self.training:
            var, mean = torch.var_mean(x, dim=0, correction=0)
            n = x.size(0)
            self.num_batches_tracked += 1
            f = 1 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
            # assigning a tensor to a buffer's name keeps it registered
            self.running_mean = (1 - f) * self.running_mean + f * mean.detach()
            self.running_var = (1 - f) * self.running_var + f * var.detach() * n / (n - 1)
        else:
            mean, var = self.running_mean, self.running_var
        return (x - mean) / torch.sqrt(var + self.eps)
