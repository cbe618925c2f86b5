"""Bug: backward returns the derivative alone, forgetting the chain rule with grad_output."""
EXPECT_FAIL = {'backward_matches_torch': 'ignores grad_output'}

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
        d = 0.5 * (1 + t) + 0.5 * x * (1 - t**2) * B * (1 + 3 * K * x**2)
        return d
