"""Correct, written differently: Megatron-LM's form, with sqrt(2/pi) written as 0.79788456 (8 digits) and
the derivative's 3 * 0.044715 * sqrt(2/pi) folded into 0.1070322243."""
EXPECT_PASS = True

import torch
class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        t = torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x))
        ff = 0.5 * x * ((1 - t * t) * (0.79788456 + 0.1070322243 * x * x)) + 0.5 * (1 + t)
        return ff * g
