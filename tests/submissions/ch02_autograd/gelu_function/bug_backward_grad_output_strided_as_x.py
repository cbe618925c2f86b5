"""Bug: backward reads grad_output through x's strides (as_strided), assuming the gradient is laid out like the
input. For a gradient laid out otherwise — (1.5 * y).sum() hands backward one value expanded, every stride 0 — it
reads the wrong elements or past the end of the storage."""
EXPECT_FAIL = {"backward_matches_torch": "stride 0"}

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
        x = x.contiguous()
        t = torch.tanh(BETA * (x + 0.044715 * x**3))
        derivative = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * BETA * (1.0 + 3 * 0.044715 * x * x)
        return grad_output.as_strided(x.shape, x.stride()) * derivative
