"""Bug: forward calls torch.nn.functional.gelu instead of computing the formula."""
EXPECT_FAIL = {'computes_formula_itself': "forward called torch's gelu"}

import math

import torch

B = math.sqrt(2 / math.pi)
K = 0.044715


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.nn.functional.gelu(x, approximate="tanh")

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = torch.tanh(B * (x + K * x**3))
        d = 0.5 * (1 + t) + 0.5 * x * (1 - t**2) * B * (1 + 3 * K * x**2)
        return grad_output * d
