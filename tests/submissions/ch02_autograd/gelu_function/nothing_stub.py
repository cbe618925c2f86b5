"""Do-nothing: the notebook's stub, still raising NotImplementedError."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0

import torch


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        raise NotImplementedError()

    @staticmethod
    def backward(ctx, grad_output):
        raise NotImplementedError()
