"""Bug: backward writes into grad_output whenever it can (a contiguous one), copying only a gradient it could not
write into. Every gradient it returns is right; the caller's grad_output (shared by every use of GELU's output) is
not."""
EXPECT_FAIL = {"backward_matches_torch": "changed grad_output in place"}

import math

import torch

BETA = math.sqrt(2.0 / math.pi)


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1.0 + torch.tanh(BETA * (x + 0.044715 * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = torch.tanh(BETA * (x + 0.044715 * x**3))
        derivative = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * BETA * (1.0 + 3 * 0.044715 * x * x)
        g = grad_output if grad_output.is_contiguous() else grad_output.clone()
        return g.mul_(derivative)
