"""Bug: checks the constructor arguments with assert, raising AssertionError instead of ValueError."""
import math

import torch
from torch import nn

EXPECT_FAIL = {'rejects_bad_arguments': 'AssertionError'}


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        assert dim >= 2 and dim % 2 == 0, "dim must be even and >= 2"
        assert max_len >= 1, "max_len must be >= 1"
        position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
        pe = torch.zeros(max_len, dim)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x):
        if x.dim() != 3 or x.size(-1) != self.pe.size(1):
            raise ValueError("x must have shape (batch, seq, dim)")
        if x.size(1) > self.pe.size(0):
            raise ValueError("sequence longer than max_len")
        return x + self.pe[: x.size(1)].to(x.dtype)
