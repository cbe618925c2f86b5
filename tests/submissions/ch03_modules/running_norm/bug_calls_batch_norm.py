"""Bug: hands the work to F.batch_norm instead of computing the statistics."""
import torch
import torch.nn.functional as F
from torch import nn

EXPECT_FAIL = {"computes_statistics_itself": "called torch batch_norm"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        factor = 0.0
        if self.training:
            self.num_batches_tracked += 1
            factor = 1 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        return F.batch_norm(x, self.running_mean, self.running_var, training=self.training,
                            momentum=factor, eps=self.eps)
