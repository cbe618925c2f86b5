"""Correct, written differently: defines vjp (torch's alias of backward) instead of backward, computes every
dtype in float64 and casts back, keeps its constants on ctx and returns a one-element tuple."""
EXPECT_PASS = True

import math

import torch

HALF, KAPPA = 0.5, 0.044715


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.beta = math.sqrt(2.0) / math.sqrt(math.pi)
        z = x.to(torch.float64)
        y = HALF * z * (1.0 + torch.tanh(ctx.beta * (z + KAPPA * z * z * z)))
        return y.to(x.dtype)

    @staticmethod
    def vjp(ctx, dy):
        (x,) = ctx.saved_tensors
        z = x.to(torch.float64)
        th = torch.tanh(ctx.beta * (z + KAPPA * z * z * z))
        slope = HALF * (1.0 + th) + HALF * z * (1.0 - th * th) * ctx.beta * (1.0 + 3.0 * KAPPA * z * z)
        return ((dy.to(torch.float64) * slope).to(x.dtype),)
