"""Bug: normalises with the running statistics as they were, and only then folds the batch into them."""
import torch
from torch import nn

EXPECT_FAIL = {"train_matches_batchnorm": "running statistics; it must use"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        out = (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
        if self.training:
            with torch.no_grad():
                self.num_batches_tracked += 1
                f = 1 / self.num_batches_tracked.item() if self.momentum is None else self.momentum
                self.running_mean.lerp_(x.mean(0), f)
                self.running_var.lerp_(x.var(0), f)
        return out
