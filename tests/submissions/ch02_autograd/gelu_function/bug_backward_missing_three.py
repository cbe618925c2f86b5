"""Bug: d/dx of 0.044715 x^3 written as 0.044715 x^2 (the factor 3 forgotten)."""
EXPECT_FAIL = {'backward_matches_torch': 'factor 3 is missing', 'gradcheck_float64': 'factor 3'}

import math

import torch

B = math.sqrt(2 / math.pi)
K = 0.044715


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(B * (x + K * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = torch.tanh(B * (x + K * x**3))
        d = 0.5 * (1 + t) + 0.5 * x * (1 - t**2) * B * (1 + K * x**2)
        return grad_output * d
