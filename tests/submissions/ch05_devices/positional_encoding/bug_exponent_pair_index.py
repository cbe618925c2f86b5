"""Bug: the exponent uses the pair index i instead of 2i (10000 ** (i / dim)), so the frequencies fall too slowly."""
import torch
from torch import nn

EXPECT_FAIL = {'encoding_values': 'the exponent is i / dim'}


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        if dim < 2 or dim % 2:
            raise ValueError("dim must be even and >= 2")
        if max_len < 1:
            raise ValueError("max_len must be >= 1")
        i = torch.arange(dim // 2, dtype=torch.float32)
        angles = torch.arange(max_len, dtype=torch.float32)[:, None] / 10000 ** (i / dim)
        pe = torch.zeros(max_len, dim)
        pe[:, 0::2] = angles.sin()
        pe[:, 1::2] = angles.cos()
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x):
        if x.dim() != 3 or x.size(-1) != self.pe.size(1):
            raise ValueError("x must have shape (batch, seq, dim)")
        if x.size(1) > self.pe.size(0):
            raise ValueError("sequence longer than max_len")
        return x + self.pe[: x.size(1)].to(x.dtype)
