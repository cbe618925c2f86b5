"""Correct, written differently: torch.mul/torch.add/addcmul calls, the cube via x * x * x, the output saved
as well, and backward that checks ctx.needs_input_grad."""
EXPECT_PASS = True

import math

import torch

_C = math.sqrt(2 / math.pi)


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        u = torch.mul(torch.addcmul(x, x * x, x, value=0.044715), _C)
        t = torch.tanh(u)
        y = torch.mul(torch.mul(x, 0.5), torch.add(t, 1.0))
        ctx.save_for_backward(x, t)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        if not ctx.needs_input_grad[0]:
            return None
        x, t = ctx.saved_tensors
        du_dx = torch.add(torch.mul(x * x, 3 * 0.044715), 1.0) * _C
        dy_dx = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du_dx
        return torch.mul(grad_output, dy_dx)
