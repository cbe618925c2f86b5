"""Bug: backward left returning None ("autograd will figure it out")."""
EXPECT_FAIL = {"backward_matches_torch": "backward returned None", "computes_formula_itself": "backward returned None",
               "gradcheck_float64": "backward returned None"}

import math

import torch

C = math.sqrt(2 / math.pi)
K = 0.044715


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(C * (x + K * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = torch.tanh(C * (x + K * x**3))
        return None
