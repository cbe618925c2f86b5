"""Do-nothing: forward returns zeros, backward returns ones."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0

import torch


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.zeros_like(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return torch.ones_like(x)
