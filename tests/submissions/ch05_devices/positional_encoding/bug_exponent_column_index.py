"""Bug: 10000 ** (j / dim) with each column's own index j, so cos column 2i + 1 gets another frequency."""
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
        j = torch.arange(dim, dtype=torch.float32)
        angles = torch.arange(max_len, dtype=torch.float32)[:, None] / 10000 ** (j / dim)
        pe = angles.clone()
        pe[:, 0::2] = angles[:, 0::2].sin()
        pe[:, 1::2] = angles[:, 1::2].cos()
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x):
        if x.dim() != 3 or x.size(-1) != self.pe.size(1):
            raise ValueError("x must have shape (batch, seq, dim)")
        if x.size(1) > self.pe.size(0):
            raise ValueError("sequence longer than max_len")
        return x + self.pe[: x.size(1)].to(x.dtype)
