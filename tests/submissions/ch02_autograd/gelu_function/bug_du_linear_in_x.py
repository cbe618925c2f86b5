"""Bug: du/dx written with 3 * 0.044715 * x instead of 3 * 0.044715 * x**2."""
EXPECT_FAIL = {"backward_matches_torch": "the x is squared"}

import math, torch
B = math.sqrt(2 / math.pi)
class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(B * (x + 0.044715 * x ** 3)))
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        t = torch.tanh(B * (x + 0.044715 * x ** 3))
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t ** 2) * B * (1 + 3 * 0.044715 * x))
