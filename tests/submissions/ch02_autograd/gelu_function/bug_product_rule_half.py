"""Bug: treats tanh(u) as a constant: only 0.5 * (1 + tanh(u)), the x * tanh' term is gone."""
EXPECT_FAIL = {'backward_matches_torch': 'product rule'}

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
        d = 0.5 * (1 + t)
        return grad_output * d
