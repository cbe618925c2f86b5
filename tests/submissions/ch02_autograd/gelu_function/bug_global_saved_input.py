"""Bug: saves x in a module-level dict instead of on ctx, so a second call overwrites the first's input."""
EXPECT_FAIL = {"two_calls_in_one_graph": "share their saved input", "saves_input_for_backward": "ctx.x = x"}

import math

import torch

_saved = {}


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        _saved["x"] = x
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        x = _saved["x"]
        t = torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))
        return grad_output * (0.5 * (1 + t) + 0.5 * x * (1 - t**2) * math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * x**2))
