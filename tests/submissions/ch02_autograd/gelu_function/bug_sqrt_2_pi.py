"""Bug: sqrt(2*pi) instead of sqrt(2/pi), in forward and backward."""
EXPECT_FAIL = {"forward_matches_torch": "sqrt(2*pi)", "backward_matches_torch": "sqrt(2*pi)"}

import math, torch
B = math.sqrt(2 * math.pi)
class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(B * (x + 0.044715 * x ** 3)))
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        t = torch.tanh(B * (x + 0.044715 * x ** 3))
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t ** 2) * B * (1 + 3 * 0.044715 * x ** 2))
