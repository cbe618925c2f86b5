"""Correct, written differently: the table is computed in float64 with explicit pair indices, then stored as float32."""
import torch
from torch import nn

EXPECT_PASS = True


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        if dim < 2 or dim % 2 != 0:
            raise ValueError(f"dim must be an even number >= 2, got {dim}")
        if max_len < 1:
            raise ValueError(f"max_len must be >= 1, got {max_len}")
        self.dim, self.max_len = dim, max_len
        pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
        i = torch.arange(dim // 2, dtype=torch.float64)
        angle = pos / torch.pow(10000.0, 2 * i / dim)
        pe = torch.zeros(max_len, dim, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle)
        self.register_buffer("pe", pe.float(), persistent=False)

    def forward(self, x):
        if x.dim() != 3:
            raise ValueError(f"expected x of shape (batch, seq, dim), got {tuple(x.shape)}")
        if x.size(-1) != self.dim:
            raise ValueError(f"last dim of x is {x.size(-1)}, expected {self.dim}")
        if x.size(1) > self.max_len:
            raise ValueError(f"sequence of length {x.size(1)} is longer than max_len={self.max_len}")
        return x + self.pe[: x.size(1)].to(x.dtype)
