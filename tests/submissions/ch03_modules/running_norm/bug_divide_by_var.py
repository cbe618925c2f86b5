"""Bug: divides by var + eps instead of its square root."""
import torch
from torch import nn

EXPECT_FAIL = {"train_matches_batchnorm": "divided by the variance"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        if not self.training:
            return (x - self.running_mean) / (self.running_var + self.eps)
        m = x.mean(0)
        v = x.var(0, unbiased=False)
        with torch.no_grad():
            self.num_batches_tracked += 1
            k = 1 / self.num_batches_tracked.item() if self.momentum is None else self.momentum
            self.running_mean.lerp_(m, k)
            self.running_var.lerp_(x.var(0, unbiased=True), k)
        return (x - m) / (v + self.eps)
