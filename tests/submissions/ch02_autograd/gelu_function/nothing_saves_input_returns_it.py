"""Do-nothing that looks busy: saves x with save_for_backward (so an in-place change is caught), but forward
returns x unchanged and backward returns grad_output."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0

import torch


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clone()

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.ones_like(x)
