"""Bug: tanh written by hand with exp, which overflows (inf / inf = nan) for large |x|."""
EXPECT_FAIL = {'forward_matches_torch': 'overflows'}

import math

import torch

B = math.sqrt(2 / math.pi)
K = 0.044715


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        u = B * (x + K * x**3)
        e = torch.exp(2 * u)
        return 0.5 * x * (1 + (e - 1) / (e + 1))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = torch.tanh(B * (x + K * x**3))
        d = 0.5 * (1 + t) + 0.5 * x * (1 - t**2) * B * (1 + 3 * K * x**2)
        return grad_output * d
