"""Bug: backward is only a lookup: forward asks torch.autograd.grad for the derivative and saves it."""
EXPECT_FAIL = {"computes_formula_itself": "forward asks autograd for the derivative"}

import math

import torch


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        with torch.enable_grad():
            z = x.detach().requires_grad_(True)
            y = 0.5 * z * (1 + torch.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3)))
            (slope,) = torch.autograd.grad(y.sum(), z)
        ctx.save_for_backward(x, slope)
        return y.detach()

    @staticmethod
    def backward(ctx, grad_output):
        _, slope = ctx.saved_tensors
        return grad_output * slope
