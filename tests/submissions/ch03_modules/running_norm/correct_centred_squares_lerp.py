"""Correct, written differently: torch.full buffers, centred squares for the variance, torch.lerp + copy_, add_ counter."""
import torch
from torch import nn

EXPECT_PASS = True


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.register_buffer("running_mean", torch.full((num_features,), 0.0))
        self.register_buffer("running_var", torch.full((num_features,), 1.0))
        self.register_buffer("num_batches_tracked", torch.zeros((), dtype=torch.long))

    def _factor(self):
        if self.momentum is None:
            return 1.0 / float(self.num_batches_tracked)
        return float(self.momentum)

    def forward(self, x):
        if not self.training:
            return (x - self.running_mean) / (self.running_var + self.eps).sqrt()
        n = x.size(0)
        mean = x.mean(dim=0)
        centred = x - mean
        var = centred.pow(2).sum(dim=0) / n
        with torch.no_grad():
            self.num_batches_tracked.add_(1)
            w = self._factor()
            self.running_mean.copy_(torch.lerp(self.running_mean, mean, w))
            self.running_var.copy_(torch.lerp(self.running_var, centred.pow(2).sum(dim=0) / (n - 1), w))
        return centred / (var + self.eps).sqrt()
