"""Bug: backward flattens with .view(-1), which fails for a non-contiguous grad_output (use reshape)."""
EXPECT_FAIL = {"any_shape_and_layout": "view size is not compatible"}

import math

import torch

C = math.sqrt(2 / math.pi)


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(C * (x + 0.044715 * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        flat = x.reshape(-1)
        t = torch.tanh(C * (flat + 0.044715 * flat**3))
        d = 0.5 * (1 + t) + 0.5 * flat * (1 - t**2) * C * (1 + 3 * 0.044715 * flat**2)
        return (grad_output.view(-1) * d).view(x.shape)
