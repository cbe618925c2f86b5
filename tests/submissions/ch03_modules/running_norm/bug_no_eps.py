"""Bug: forgets eps: divides by sqrt(var) (huge outputs for features whose variance is tiny)."""
import torch
from torch import nn

EXPECT_FAIL = {"train_matches_batchnorm": "eps is missing", "eval_uses_running_stats": "eps is missing"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        if self.training:
            mu = x.mean(dim=0)
            var = x.var(dim=0, unbiased=False)
            with torch.no_grad():
                self.num_batches_tracked += 1
                f = self.momentum if self.momentum is not None else 1.0 / int(self.num_batches_tracked)
                self.running_mean.mul_(1 - f).add_(f * mu)
                self.running_var.mul_(1 - f).add_(f * x.var(dim=0, unbiased=True))
            return (x - mu) / var.sqrt()
        return (x - self.running_mean) / self.running_var.sqrt()
