"""Bug: takes the mean and variance over dim 1 (per sample, like LayerNorm) instead of over the batch."""
import torch
from torch import nn

EXPECT_FAIL = {"train_matches_batchnorm": "over dim 1"}


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
        mean = x.mean(dim=1, keepdim=True)
        var = x.var(dim=1, unbiased=False, keepdim=True)
        with torch.no_grad():
            self.num_batches_tracked += 1
            f = 1 / self.num_batches_tracked.item() if self.momentum is None else self.momentum
            self.running_mean.lerp_(x.mean(0), f)
            self.running_var.lerp_(x.var(0), f)
        return (x - mean) / torch.sqrt(var + self.eps)
