"""Bug: backward makes sqrt(2/pi) with torch.tensor(...), a float32 constant, so float64 gradients lose precision."""
EXPECT_FAIL = {"backward_matches_torch": "float32 precision"}

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
        c = torch.tensor(B)                   # float32!
        t = torch.tanh(c * (x + 0.044715 * x ** 3))
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t ** 2) * c * (1 + 3 * 0.044715 * x ** 2))
