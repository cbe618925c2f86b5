"""Bug: marks the output non-differentiable (thinking that a hand-written backward needs it), so autograd never
calls backward and no gradient reaches x."""
EXPECT_FAIL = {"backward_matches_torch": "has no grad_fn", "computes_formula_itself": "has no grad_fn"}

import math

import torch

C = math.sqrt(2 / math.pi)


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        y = 0.5 * x * (1 + torch.tanh(C * (x + 0.044715 * x**3)))
        ctx.mark_non_differentiable(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = torch.tanh(C * (x + 0.044715 * x**3))
        return grad_output * (0.5 * (1 + t) + 0.5 * x * (1 - t**2) * C * (1 + 3 * 0.044715 * x**2))
