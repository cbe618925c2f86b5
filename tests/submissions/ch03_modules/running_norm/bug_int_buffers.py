"""Bug: builds the running statistics from Python int lists, so they are int64 tensors."""
import torch
from torch import nn

EXPECT_FAIL = {"buffers_registered": "must be a floating tensor"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.tensor([0] * num_features))
        self.register_buffer("running_var", torch.tensor([1] * num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0))

    def forward(self, x):
        if not self.training:
            return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
        mean, var = x.mean(0), x.var(0, unbiased=False)
        with torch.no_grad():
            self.num_batches_tracked += 1
            f = 1 / self.num_batches_tracked.item() if self.momentum is None else self.momentum
            self.running_mean = (1 - f) * self.running_mean + f * mean
            self.running_var = (1 - f) * self.running_var + f * x.var(0)
        return (x - mean) / torch.sqrt(var + self.eps)
