"""Bug: builds the new running values feature by feature in torch.zeros(n) (float32, cpu) and assigns them."""
import torch
from torch import nn

EXPECT_FAIL = {"buffers_follow_to": "created with the default dtype"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.num_features = num_features
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        if not self.training:
            return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
        mean, var = x.mean(0), x.var(0, unbiased=False)
        unbiased = x.var(0)
        self.num_batches_tracked += 1
        f = 1 / self.num_batches_tracked.item() if self.momentum is None else self.momentum
        new_mean = torch.zeros(self.num_features)
        new_var = torch.zeros(self.num_features)
        for j in range(self.num_features):
            new_mean[j] = (1 - f) * self.running_mean[j].item() + f * mean[j].item()
            new_var[j] = (1 - f) * self.running_var[j].item() + f * unbiased[j].item()
        self.running_mean = new_mean
        self.running_var = new_var
        return (x - mean) / torch.sqrt(var + self.eps)
