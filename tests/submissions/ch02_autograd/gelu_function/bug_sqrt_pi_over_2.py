"""Bug: the factor written as sqrt(pi/2) instead of sqrt(2/pi), in forward and backward."""
EXPECT_FAIL = {"forward_matches_torch": "sqrt(pi/2)", "backward_matches_torch": "sqrt(pi/2)"}

import math

import torch

C = math.sqrt(math.pi / 2)


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1.0 + torch.tanh(C * (x + 0.044715 * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = torch.tanh(C * (x + 0.044715 * x**3))
        return grad_output * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t**2) * C * (1.0 + 3 * 0.044715 * x**2))
