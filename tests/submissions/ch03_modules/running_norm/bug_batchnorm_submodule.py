"""Bug: wraps nn.BatchNorm1d, so the buffers belong to a submodule and the statistics are not computed here."""
from torch import nn

EXPECT_FAIL = {"computes_statistics_itself": "contains a BatchNorm module", "buffers_registered": "submodule"}


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.bn = nn.BatchNorm1d(num_features, eps=eps, momentum=momentum, affine=False)

    def forward(self, x):
        return self.bn(x)
