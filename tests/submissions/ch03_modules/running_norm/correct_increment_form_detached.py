"""Correct, written differently: running += f * (value - running) from detached statistics (no no_grad), counter incremented last."""
import torch
from torch import nn

EXPECT_PASS = True


class RunningNorm(nn.Module):
    def __init__(self, num_features: int, momentum: float | None = 0.1, eps: float = 1e-5):
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        if not self.training:
            return (x - self.running_mean) / (self.running_var + self.eps) ** 0.5
        n = x.shape[0]
        bm = x.mean(0)
        bv = x.var(0, unbiased=False)
        d = x.detach()
        dm, dv = d.mean(0), d.var(0, unbiased=True)
        k = int(self.num_batches_tracked)
        if self.momentum is None:
            # cumulative average: new = old + (value - old) / (k + 1)
            self.running_mean += (dm - self.running_mean) / (k + 1)
            self.running_var += (dv - self.running_var) / (k + 1)
        else:
            self.running_mean += self.momentum * (dm - self.running_mean)
            self.running_var += self.momentum * (dv - self.running_var)
        self.num_batches_tracked += 1
        return (x - bm) / (bv + self.eps) ** 0.5
