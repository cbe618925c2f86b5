"""Bug: the cubic term left out: tanh(sqrt(2/pi) * x)."""
EXPECT_FAIL = {"forward_matches_torch": "cubic term 0.044715 * x**3 inside tanh is missing"}

import math

import torch

C = math.sqrt(2 / math.pi)


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(C * x))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = torch.tanh(C * x)
        return grad_output * (0.5 * (1 + t) + 0.5 * x * (1 - t**2) * C)
