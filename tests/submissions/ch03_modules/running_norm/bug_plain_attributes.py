"""Bug: keeps the running statistics as plain tensor attributes instead of registered buffers."""
import torch
from torch import nn

EXPECT_FAIL = {"buffers_registered": "plain tensor attribute", "buffers_follow_to": "not a registered buffer"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.running_mean = torch.zeros(num_features)
        self.running_var = torch.ones(num_features)
        self.num_batches_tracked = torch.tensor(0)

    def forward(self, x):
        if not self.training:
            return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
        n = x.shape[0]
        mean, var = x.mean(0), x.var(0, unbiased=False)
        with torch.no_grad():
            self.num_batches_tracked += 1
            m = 1 / self.num_batches_tracked.item() if self.momentum is None else self.momentum
            self.running_mean = (1 - m) * self.running_mean + m * mean
            self.running_var = (1 - m) * self.running_var + m * var * n / (n - 1)
        return (x - mean) / torch.sqrt(var + self.eps)
