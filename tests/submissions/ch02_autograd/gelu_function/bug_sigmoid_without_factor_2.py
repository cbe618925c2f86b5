"""Bug: rewrites 0.5 * (1 + tanh(u)) as sigmoid(u); it is sigmoid(2u)."""
EXPECT_FAIL = {"forward_matches_torch": "factor 2 is missing"}

import math

import torch

C = math.sqrt(2 / math.pi)


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(C * (x + 0.044715 * x**3))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(C * (x + 0.044715 * x**3))
        return grad_output * (s + x * s * (1 - s) * C * (1 + 3 * 0.044715 * x**2))
