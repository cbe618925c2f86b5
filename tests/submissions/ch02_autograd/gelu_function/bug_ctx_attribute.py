"""Bug: keeps x as a ctx attribute instead of save_for_backward, so an in-place change of x goes unnoticed."""
EXPECT_FAIL = {'saves_input_for_backward': 'ctx.x = x'}

import math

import torch

B = math.sqrt(2 / math.pi)
K = 0.044715


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return 0.5 * x * (1 + torch.tanh(B * (x + K * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        x = ctx.x
        t = torch.tanh(B * (x + K * x**3))
        d = 0.5 * (1 + t) + 0.5 * x * (1 - t**2) * B * (1 + 3 * K * x**2)
        return grad_output * d
