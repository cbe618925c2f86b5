"""Do-nothing: forward returns a copy of x, backward passes grad_output through (the identity function)."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0

import torch


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output
