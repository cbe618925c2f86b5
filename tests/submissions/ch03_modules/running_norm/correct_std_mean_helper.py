"""Correct, written differently: torch.std_mean, a blend helper with mul_/add_(alpha=), PyTorch-style factor."""
import torch
from torch import nn

EXPECT_PASS = True


def _blend_into(buffer, value, factor):
    buffer.mul_(1.0 - factor).add_(value, alpha=factor)


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super(RunningNorm, self).__init__()
        self.num_features, self.momentum, self.eps = num_features, momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        if self.training:
            std, mean = torch.std_mean(x, dim=0, unbiased=False)
            var = std * std
            n = x.shape[0]
            self.num_batches_tracked += 1
            exponential_average_factor = (1.0 / self.num_batches_tracked.item() if self.momentum is None
                                          else self.momentum)
            with torch.no_grad():
                _blend_into(self.running_mean, mean, exponential_average_factor)
                _blend_into(self.running_var, var * (n / (n - 1.0)), exponential_average_factor)
        else:
            mean, var = self.running_mean, self.running_var
        return (x - mean) / torch.sqrt(var + self.eps)
