"""Bug: works on x.reshape(-1) "to handle any shape" and forgets to give the result x's shape back."""
EXPECT_FAIL = {"forward_matches_torch": "the output must have the input's shape",
               "any_shape_and_layout": "the output must have the input's shape"}

import math

import torch

C = math.sqrt(2 / math.pi)


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        flat = x.reshape(-1)
        ctx.save_for_backward(flat)
        return 0.5 * flat * (1 + torch.tanh(C * (flat + 0.044715 * flat**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (flat,) = ctx.saved_tensors
        t = torch.tanh(C * (flat + 0.044715 * flat**3))
        return grad_output * (0.5 * (1 + t) + 0.5 * flat * (1 - t**2) * C * (1 + 3 * 0.044715 * flat**2))
