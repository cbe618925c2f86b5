"""Bug: computes in float64 for accuracy and forgets to convert back to x's dtype."""
EXPECT_FAIL = {'forward_matches_torch': "keep x's dtype", 'bfloat16': "keep x's dtype"}

import math

import torch

B = math.sqrt(2 / math.pi)
K = 0.044715


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        x = x.double()
        return 0.5 * x * (1 + torch.tanh(B * (x + K * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        x = x.double()
        t = torch.tanh(B * (x + K * x**3))
        d = 0.5 * (1 + t) + 0.5 * x * (1 - t**2) * B * (1 + 3 * K * x**2)
        return (grad_output * d).to(grad_output.dtype)
