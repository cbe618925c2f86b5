"""Correct, written differently: the derivative of tanh written as sech(u)**2 = 1 / cosh(u)**2."""
EXPECT_PASS = True

import math, torch
C = math.sqrt(2 / math.pi)
class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(C * (x + 0.044715 * torch.pow(x, 3))))
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        u = C * (x + 0.044715 * x ** 3)
        sech2 = 1 / torch.cosh(u) ** 2
        return g * (0.5 * (1 + torch.tanh(u)) + 0.5 * x * sech2 * C * (1 + 0.134145 * x ** 2))
