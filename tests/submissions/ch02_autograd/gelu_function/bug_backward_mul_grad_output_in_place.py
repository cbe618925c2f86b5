"""Bug: backward multiplies grad_output in place and returns it. The value is right for a fresh gradient, but
(1.5 * y).sum() hands backward one value expanded (stride 0), which cannot be written into, and a gradient that
other uses of y share is corrupted."""
EXPECT_FAIL = {"backward_matches_torch": "changed grad_output in place"}

import math

import torch

BETA = math.sqrt(2.0 / math.pi)
KAPPA = 0.044715


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1.0 + torch.tanh(BETA * (x + KAPPA * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = torch.tanh(BETA * (x + KAPPA * x**3))
        derivative = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * BETA * (1.0 + 3.0 * KAPPA * x * x)
        grad_output *= derivative
        return grad_output
