"""Bug: backward is not explicit: it rebuilds the formula with grad enabled and asks torch.autograd.grad."""
EXPECT_FAIL = {"computes_formula_itself": "backward asks autograd for the derivative"}

import math

import torch


def gelu(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gelu(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            leaf = x.detach().requires_grad_(True)
            (grad,) = torch.autograd.grad(gelu(leaf), leaf, grad_output)
        return grad
