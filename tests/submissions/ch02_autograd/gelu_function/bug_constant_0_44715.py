"""Bug: a slipped decimal, 0.44715 instead of 0.044715 (in forward and backward)."""
EXPECT_FAIL = {'forward_matches_torch': '0.44715', 'backward_matches_torch': '0.44715'}

import math

import torch

B = math.sqrt(2 / math.pi)
K = 0.044715


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(B * (x + 0.44715 * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = torch.tanh(B * (x + 0.44715 * x**3))
        d = 0.5 * (1 + t) + 0.5 * x * (1 - t**2) * B * (1 + 3 * 0.44715 * x**2)
        return grad_output * d
