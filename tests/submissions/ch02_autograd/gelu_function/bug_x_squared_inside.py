"""Bug: x**2 instead of x**3 inside tanh (and its derivative accordingly)."""
EXPECT_FAIL = {"forward_matches_torch": "x**2 is used"}

import math

import torch

C = math.sqrt(2 / math.pi)


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(C * (x + 0.044715 * x**2)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = torch.tanh(C * (x + 0.044715 * x**2))
        return grad_output * (0.5 * (1 + t) + 0.5 * x * (1 - t**2) * C * (1 + 2 * 0.044715 * x))
