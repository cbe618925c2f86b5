"""Correct, written differently: sin and cos stacked on a new last dim and flattened to interleave them."""
import torch
from torch import nn

EXPECT_PASS = True


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        if dim < 2:
            raise ValueError("dim < 2")
        if dim % 2 == 1:
            raise ValueError("dim is odd")
        if max_len < 1:
            raise ValueError("max_len < 1")
        self.dim = dim
        pos = torch.arange(max_len, dtype=torch.float32)[:, None]
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        angles = pos * inv_freq
        self.register_buffer("pe", torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(1), persistent=False)

    def forward(self, x):
        if x.dim() != 3:
            raise ValueError("x must be 3-D")
        batch, seq, dim = x.shape
        if dim != self.dim:
            raise ValueError("wrong feature size")
        if seq > self.pe.size(0):
            raise ValueError("sequence too long")
        return x + self.pe[:seq].to(x)
