"""Correct, written differently: log-space frequencies, and a 3-way unpack of x.shape (a ValueError for other ranks)."""
import math

import torch
from torch import nn

EXPECT_PASS = True


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        if dim < 2 or dim & 1:
            raise ValueError(f"dim={dim}: need an even number of features, at least 2")
        if max_len < 1:
            raise ValueError(f"max_len={max_len}: need at least one position")
        log_inv = torch.arange(0, dim, 2, dtype=torch.float64) * (-math.log(10000) / dim)
        angles = torch.arange(max_len, dtype=torch.float64)[:, None] * log_inv.exp()
        pe = torch.empty(max_len, dim // 2, 2, dtype=torch.float64)
        pe[..., 0], pe[..., 1] = angles.sin(), angles.cos()
        self.register_buffer("pe", pe.view(max_len, dim).float(), persistent=False)

    def forward(self, x):
        _, seq, dim = x.shape
        if dim != self.pe.shape[1] or seq > self.pe.shape[0]:
            raise ValueError(f"x of shape {tuple(x.shape)} but the table is {tuple(self.pe.shape)}")
        return self.pe[:seq].to(x.dtype) + x
