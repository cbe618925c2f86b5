"""Bug: only forward is written; backward is left to torch.autograd.Function (which cannot differentiate it)."""
EXPECT_FAIL = {"backward_matches_torch": "has no backward method", "gradcheck_float64": "has no backward method",
               "computes_formula_itself": "has no backward method", "saves_input_for_backward": "has no backward method"}

import math

import torch


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
