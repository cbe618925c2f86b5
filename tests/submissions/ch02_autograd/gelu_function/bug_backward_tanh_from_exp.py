"""Bug: backward writes tanh(u) by hand as (exp(2u) - 1) / (exp(2u) + 1), which is inf/inf = nan for large x."""
EXPECT_FAIL = {"backward_matches_torch": "overflows for large |x|"}

import math

import torch

C = math.sqrt(2 / math.pi)


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(C * (x + 0.044715 * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        e = torch.exp(2 * C * (x + 0.044715 * x**3))
        t = (e - 1) / (e + 1)
        return grad_output * (0.5 * (1 + t) + 0.5 * x * (1 - t**2) * C * (1 + 3 * 0.044715 * x**2))
