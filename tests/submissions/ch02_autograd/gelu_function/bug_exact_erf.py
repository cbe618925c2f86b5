"""Bug: implements the exact (erf) GELU, F.gelu's default, not the tanh approximation."""
EXPECT_FAIL = {'forward_matches_torch': 'exact GELU', 'backward_matches_torch': 'erf'}

import math

import torch

B = math.sqrt(2 / math.pi)
K = 0.044715


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        pdf = torch.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        return grad_output * (0.5 * (1 + torch.erf(x / math.sqrt(2))) + x * pdf)
