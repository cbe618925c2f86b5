"""Bug: reads momentum=None as "use the default", 0.1, instead of a cumulative average."""
import torch
from torch import nn

EXPECT_FAIL = {"momentum_none_cumulative": "treated as 0.1"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum = 0.1 if momentum is None else momentum
        self.eps = eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        if not self.training:
            return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
        mean, var = x.mean(0), x.var(0, unbiased=False)
        with torch.no_grad():
            self.num_batches_tracked += 1
            self.running_mean.lerp_(mean, self.momentum)
            self.running_var.lerp_(x.var(0), self.momentum)
        return (x - mean) / torch.sqrt(var + self.eps)
