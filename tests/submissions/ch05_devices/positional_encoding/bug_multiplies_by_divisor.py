"""Bug: multiplies the position by 10000 ** (2i / dim) instead of dividing by it."""
import torch
from torch import nn

EXPECT_FAIL = {'encoding_values': 'multiplied by 10000'}


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        if dim < 2 or dim % 2:
            raise ValueError("dim must be even and >= 2")
        if max_len < 1:
            raise ValueError("max_len must be >= 1")
        position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
        angles = position * 10000 ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
        pe = torch.zeros(max_len, dim, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(angles)
        pe[:, 1::2] = torch.cos(angles)
        self.register_buffer("pe", pe.float(), persistent=False)

    def forward(self, x):
        if x.dim() != 3 or x.size(-1) != self.pe.size(1):
            raise ValueError("x must have shape (batch, seq, dim)")
        if x.size(1) > self.pe.size(0):
            raise ValueError("sequence longer than max_len")
        return x + self.pe[: x.size(1)].to(x.dtype)
