"""Correct: the derivative's terms in the order they are written on paper, in the input's dtype. (Its product
0.5 * x * du/dx overflows float32 only from |x| ~ 2e13, far beyond any activation; the spec asks for the formula,
not for an order of terms that survives there, so the graders' values stop at 1e5.)"""
EXPECT_PASS = True

import math

import torch

BETA = math.sqrt(2.0 / math.pi)
KAPPA = 0.044715


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1.0 + torch.tanh(BETA * (x + KAPPA * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = torch.tanh(BETA * (x + KAPPA * x**3))
        du = BETA * (1.0 + 3.0 * KAPPA * x**2)
        return grad_output * (0.5 * (1.0 + t) + (0.5 * x * du) * (1.0 - t**2))
