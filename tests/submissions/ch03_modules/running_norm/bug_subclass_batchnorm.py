"""Bug: subclasses nn.BatchNorm1d instead of computing the statistics."""
from torch import nn

EXPECT_FAIL = {"computes_statistics_itself": "contains a BatchNorm module"}


class RunningNorm(nn.BatchNorm1d):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__(num_features, eps=eps, momentum=momentum, affine=False)
