"""Bug: the N / (N - 1) correction of running_var counts every element (x.numel()) as N."""
import torch
from torch import nn

EXPECT_FAIL = {"train_matches_batchnorm": "x.numel(), every element"}


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
            n = x.numel()
            with torch.no_grad():
                self.num_batches_tracked += 1
                f = 1.0 / self.num_batches_tracked.item() if self.momentum is None else self.momentum
                self.running_mean.lerp_(mean, f)
                self.running_var.lerp_(var * n / (n - 1), f)
            return (x - mean) / (var + self.eps).sqrt()
        return (x - self.running_mean) / (self.running_var + self.eps).sqrt()
