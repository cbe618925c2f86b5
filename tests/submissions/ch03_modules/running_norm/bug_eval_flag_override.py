"""Bug: eval mode is tracked by a flag of its own, set in an overridden eval(); m.train(False), which is eval
mode too (eval() is train(False)), never sets it, so such a module keeps normalising with the batch's statistics
and updating the buffers."""
import torch
from torch import nn

EXPECT_FAIL = {"generated_runs": "eval mode"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.evaluating = False
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def eval(self):
        self.evaluating = True
        return super().eval()

    def train(self, mode=True):
        if mode:
            self.evaluating = False
        return super().train(mode)

    def forward(self, x):
        if self.evaluating:
            return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
        mean, var = x.mean(0), x.var(0, unbiased=False)
        with torch.no_grad():
            self.num_batches_tracked += 1
            f = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
            self.running_mean.lerp_(mean, f)
            self.running_var.lerp_(x.var(0, unbiased=True), f)
        return (x - mean) / torch.sqrt(var + self.eps)
