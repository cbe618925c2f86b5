"""Bug: recovers 0.5 * (1 + tanh(u)) as output / x, which is 0/0 = nan at x = 0."""
EXPECT_FAIL = {"backward_matches_torch": "0/0 at x = 0"}

import math, torch
B = math.sqrt(2 / math.pi)
class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = 0.5 * x * (1 + torch.tanh(B * (x + 0.044715 * x ** 3)))
        ctx.save_for_backward(x, y)
        return y
    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        half_one_plus_t = y / x              # = 0.5 (1 + tanh u) ... except at x = 0
        t = 2 * half_one_plus_t - 1
        return g * (half_one_plus_t + 0.5 * x * (1 - t ** 2) * B * (1 + 3 * 0.044715 * x ** 2))
