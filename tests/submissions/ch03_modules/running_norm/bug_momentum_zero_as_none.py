"""Bug: self.momentum or 1 / n treats momentum=0.0 like None."""
import torch
from torch import nn

EXPECT_FAIL = {"momentum_and_eps": "wrong running_mean after batch 1",
               "generated_runs": "momentum=0.0 is treated like None"}  # batch 1 alone cannot tell it from a replace


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        if self.training:
            mean, var = x.mean(0), x.var(0, unbiased=False)
            with torch.no_grad():
                self.num_batches_tracked += 1
                f = self.momentum or 1.0 / self.num_batches_tracked.item()
                self.running_mean.lerp_(mean, f)
                self.running_var.lerp_(x.var(0), f)
            return (x - mean) / (var + self.eps).sqrt()
        return (x - self.running_mean) / (self.running_var + self.eps).sqrt()
