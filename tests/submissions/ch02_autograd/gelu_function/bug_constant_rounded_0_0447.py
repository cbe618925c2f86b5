"""Bug: the constant 0.044715 rounded to 0.0447 (in forward and backward)."""
EXPECT_FAIL = {"forward_matches_torch": "rounded to 0.0447"}

import math

import torch

S = math.sqrt(2 / math.pi)


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(S * (x + 0.0447 * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        th = torch.tanh(S * (x + 0.0447 * x**3))
        return grad_output * (0.5 * (1 + th) + 0.5 * x * (1 - th * th) * S * (1 + 3 * 0.0447 * x**2))
