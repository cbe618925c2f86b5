"""Bug: forward saves memory by working in place on x (x.mul_), which changes the caller's tensor."""
EXPECT_FAIL = {"forward_matches_torch": "changed its input x in place", "bfloat16": "changed its input x in place"}

import math

import torch

C = math.sqrt(2 / math.pi)


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        t = torch.tanh(C * (x + 0.044715 * x**3))
        ctx.save_for_backward(x.clone(), t)
        return x.mul_(0.5).mul_(1 + t)

    @staticmethod
    def backward(ctx, grad_output):
        x, t = ctx.saved_tensors
        return grad_output * (0.5 * (1 + t) + 0.5 * x * (1 - t**2) * C * (1 + 3 * 0.044715 * x**2))
