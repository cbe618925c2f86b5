"""Do-nothing: forward returns x itself, backward returns None."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0

import torch


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad_output):
        return None
