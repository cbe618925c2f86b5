"""Bug: registers num_batches_tracked but never increments it."""
import torch
from torch import nn

EXPECT_FAIL = {"train_matches_batchnorm": "not incremented", "buffers_follow_to": "not incremented"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))
        self.seen = 0

    def forward(self, x):
        if not self.training:
            return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
        mean, var = x.mean(0), x.var(0, unbiased=False)
        with torch.no_grad():
            self.seen += 1
            m = 1 / self.seen if self.momentum is None else self.momentum
            self.running_mean.lerp_(mean, m)
            self.running_var.lerp_(x.var(0), m)
        return (x - mean) / torch.sqrt(var + self.eps)
