"""Correct, written differently: works in float32 for bfloat16 (like PyTorch's own kernels), saves x and
tanh(u) with save_for_backward, and skips the work when no gradient is needed."""
EXPECT_PASS = True

import math

import torch

SQRT_2_PI = math.sqrt(2.0 / math.pi)


def _inner(x):
    return SQRT_2_PI * (x + 0.044715 * x**3)


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        xc = x.float() if x.dtype in (torch.bfloat16, torch.float16) else x
        t = torch.tanh(_inner(xc))
        ctx.save_for_backward(x, t)
        return (0.5 * xc * (1.0 + t)).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        x, t = ctx.saved_tensors
        if not ctx.needs_input_grad[0]:
            return None
        xc = x.to(t.dtype)
        d = 0.5 * (1.0 + t) + 0.5 * xc * (1.0 - t * t) * SQRT_2_PI * (1.0 + 3 * 0.044715 * xc * xc)
        return (grad_output.to(t.dtype) * d).to(x.dtype)
