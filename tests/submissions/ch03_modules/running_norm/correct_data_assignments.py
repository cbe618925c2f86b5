"""Correct, written differently: .data assignments for the buffers and the counter, variance by hand."""
import torch
from torch import nn

EXPECT_PASS = True


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.num_features = num_features
        self.momentum = momentum
        self.eps = eps
        self.register_buffer('running_mean', torch.zeros(num_features))
        self.register_buffer('running_var', torch.ones(num_features))
        self.register_buffer('num_batches_tracked', torch.tensor(0))

    def forward(self, x):
        if self.training:
            mean = x.mean(0)
            var = ((x - mean) ** 2).mean(0)
            m = x.size(0)
            self.num_batches_tracked.data += 1
            if self.momentum is None:
                factor = 1 / self.num_batches_tracked.item()
            else:
                factor = self.momentum
            self.running_mean.data = (1 - factor) * self.running_mean.data + factor * mean.data
            self.running_var.data = (1 - factor) * self.running_var.data + factor * var.data * m / (m - 1)
            return (x - mean) / torch.sqrt(var + self.eps)
        return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
