"""Bug: tanh' written as 1 + tanh(u)**2 (a sign slip)."""
EXPECT_FAIL = {"backward_matches_torch": "not 1 + tanh(u)**2"}

import math

import torch

C = math.sqrt(2 / math.pi)
K = 0.044715


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(C * (x + K * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = torch.tanh(C * (x + K * x**3))
        return grad_output * (0.5 * (1 + t) + 0.5 * x * (1 + t**2) * C * (1 + 3 * K * x**2))
