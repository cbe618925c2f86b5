"""Bug: backward gets the derivative by running autograd through torch.nn.functional.gelu."""
EXPECT_FAIL = {"computes_formula_itself": "backward called torch's gelu"}

import math

import torch
import torch.nn.functional as F


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            leaf = x.detach().requires_grad_(True)
            (grad,) = torch.autograd.grad(F.gelu(leaf, approximate="tanh"), leaf, grad_output)
        return grad
