"""Bug: momentum=None averages over a Python counter of its own instead of num_batches_tracked, so after
load_state_dict (num_batches_tracked restored) the cumulative average restarts as if no batch had been seen."""
import torch
from torch import nn

EXPECT_FAIL = {"generated_runs": "load_state_dict"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.steps = 0
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        if not self.training:
            return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
        mean, var = x.mean(0), x.var(0, unbiased=False)
        with torch.no_grad():
            self.steps += 1
            self.num_batches_tracked += 1
            f = 1.0 / self.steps if self.momentum is None else self.momentum
            self.running_mean.lerp_(mean, f)
            self.running_var.lerp_(x.var(0, unbiased=True), f)
        return (x - mean) / torch.sqrt(var + self.eps)
