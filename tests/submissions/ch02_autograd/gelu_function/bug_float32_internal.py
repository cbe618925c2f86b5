"""Bug: always computes in float32 (then casts back), so float64 loses precision and gradcheck fails."""
EXPECT_FAIL = {'forward_matches_torch': 'float32 precision', 'gradcheck_float64': 'float32 precision'}

import math

import torch

B = math.sqrt(2 / math.pi)
K = 0.044715


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        xf = x.float()
        return (0.5 * xf * (1 + torch.tanh(B * (xf + K * xf**3)))).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = torch.tanh(B * (x + K * x**3))
        d = 0.5 * (1 + t) + 0.5 * x * (1 - t**2) * B * (1 + 3 * K * x**2)
        return grad_output * d
