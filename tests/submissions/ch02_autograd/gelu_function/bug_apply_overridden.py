"""Bug: apply is replaced by the formula itself, so autograd differentiates the formula and backward never runs."""
EXPECT_FAIL = {"computes_formula_itself": "not GELUFunction's own backward node"}

import math

import torch


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def apply(x):
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))

    @staticmethod
    def forward(ctx, x):
        return GELUFunction.apply(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output
