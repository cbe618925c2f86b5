"""Bug: the exponent 2i // dim is an integer division, so it is 0 for every column and every frequency is 1."""
import torch
from torch import nn

EXPECT_FAIL = {'encoding_values': 'does not hold the sinusoidal encoding'}


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        if dim < 2 or dim % 2:
            raise ValueError("dim must be even and >= 2")
        if max_len < 1:
            raise ValueError("max_len must be >= 1")
        two_i = torch.arange(0, dim, 2)
        angles = torch.arange(max_len)[:, None] / 10000 ** (two_i // dim)
        pe = torch.zeros(max_len, dim)
        pe[:, 0::2] = torch.sin(angles)
        pe[:, 1::2] = torch.cos(angles)
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x):
        if x.dim() != 3 or x.size(-1) != self.pe.size(1):
            raise ValueError("x must have shape (batch, seq, dim)")
        if x.size(1) > self.pe.size(0):
            raise ValueError("sequence longer than max_len")
        return x + self.pe[: x.size(1)].to(x.dtype)
