"""Correct, written differently: the tutorial's exp(-log(10000) * 2i / dim) frequencies, all in float32."""
import math

import torch
from torch import nn

EXPECT_PASS = True


class PositionalEncoding(nn.Module):
    def __init__(self, dim: int, max_len: int = 512):
        super().__init__()
        if dim % 2 or dim < 2:
            raise ValueError("dim must be even and at least 2")
        if max_len < 1:
            raise ValueError("max_len must be positive")
        position = torch.arange(max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(10000.0) / dim))
        pe = torch.zeros(max_len, dim)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 3 or x.shape[2] != self.pe.shape[1]:
            raise ValueError(f"x must have shape (batch, seq, {self.pe.shape[1]}), got {list(x.shape)}")
        seq_len = x.shape[1]
        if seq_len > self.pe.shape[0]:
            raise ValueError(f"seq_len {seq_len} exceeds max_len {self.pe.shape[0]}")
        return x + self.pe[:seq_len].type_as(x)
