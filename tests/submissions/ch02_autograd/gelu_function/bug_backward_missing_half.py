"""Bug: the derivative's second term lost its 0.5 factor."""
EXPECT_FAIL = {'backward_matches_torch': 'missing the 0.5 factor on its second term', 'gradcheck_float64': '0.5 factor'}

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
        d = 0.5 * (1 + t) + x * (1 - t**2) * B * (1 + 3 * K * x**2)
        return grad_output * d
