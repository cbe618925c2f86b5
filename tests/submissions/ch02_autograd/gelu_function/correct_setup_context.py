"""Correct, written differently: forward without ctx plus setup_context (the PyTorch 2 style)."""
EXPECT_PASS = True

import math

import torch

C = math.sqrt(2 / math.pi)


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return 0.5 * x * (1 + torch.tanh(C * (x + 0.044715 * x * x * x)))

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        th = torch.tanh(C * (x + 0.044715 * x * x * x))
        sech2 = 1 - th * th
        return grad_out * (0.5 * (1 + th) + 0.5 * x * sech2 * C * (1 + 0.134145 * x * x))
