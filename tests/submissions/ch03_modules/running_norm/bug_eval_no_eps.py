"""Bug: training mode is right, but eval mode divides by sqrt(running_var) without eps."""
import torch
from torch import nn

EXPECT_FAIL = {"eval_uses_running_stats": "eps is missing"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        if not self.training:
            return (x - self.running_mean) / self.running_var.sqrt()
        mean, var = x.mean(0), x.var(0, unbiased=False)
        with torch.no_grad():
            self.num_batches_tracked += 1
            f = 1 / self.num_batches_tracked.item() if self.momentum is None else self.momentum
            self.running_mean.lerp_(mean, f)
            self.running_var.lerp_(x.var(0), f)
        return (x - mean) / torch.sqrt(var + self.eps)
