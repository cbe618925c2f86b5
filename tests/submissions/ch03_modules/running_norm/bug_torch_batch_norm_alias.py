"""Bug: computes the output with torch.batch_norm (the op behind F.batch_norm), not with its own statistics."""
import torch
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
        f = 0.0
        if self.training:
            self.num_batches_tracked.add_(1)
            f = self.momentum if self.momentum is not None else 1.0 / self.num_batches_tracked.item()
        return torch.batch_norm(x, None, None, self.running_mean, self.running_var, self.training, f, self.eps,
                                False)
