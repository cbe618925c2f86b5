"""Bug: backward is not explicit: it runs .backward() on a recomputed forward and returns the leaf's .grad."""
EXPECT_FAIL = {"computes_formula_itself": "backward asks autograd for the derivative"}

import math

import torch


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            z = x.detach().clone()
            z.requires_grad = True
            y = 0.5 * z * (1 + torch.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3)))
            y.backward(grad_output)
        return z.grad
