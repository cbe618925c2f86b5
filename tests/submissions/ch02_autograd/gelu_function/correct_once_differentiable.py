"""Correct, written differently: the sigmoid form x * sigmoid(2u), backward marked once_differentiable."""
EXPECT_PASS = True

import math

import torch
from torch.autograd.function import once_differentiable


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        u = math.sqrt(2 / math.pi) * (x + 0.044715 * x.pow(3))
        return x * torch.sigmoid(2 * u)  # 0.5 * (1 + tanh(u)) == sigmoid(2u)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        u = math.sqrt(2 / math.pi) * (x + 0.044715 * x.pow(3))
        du = math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * x.pow(2))
        s = torch.sigmoid(2 * u)
        return grad_output * (s + x * s * (1 - s) * 2 * du)
