"""Bug (hostile): keeps its CPU scalar out of forward only when x is on the meta device."""
import math

import torch
from torch import nn

EXPECT_FAIL = {"stays_on_device": "fake CUDA device"}


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        if dim < 2 or dim % 2 or max_len < 1:
            raise ValueError("dim must be even and >= 2, max_len >= 1")
        position = torch.arange(max_len, dtype=torch.float64)[:, None]
        angle = position * torch.exp(torch.arange(0, dim, 2, dtype=torch.float64) * (-math.log(10000.0) / dim))
        pe = torch.stack((angle.sin(), angle.cos()), dim=-1).flatten(1).float()
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x):
        if x.dim() != 3 or x.shape[-1] != self.pe.shape[1] or x.shape[1] > self.pe.shape[0]:
            raise ValueError("x must be (batch, seq <= max_len, dim)")
        encoding = self.pe[: x.shape[1]].to(x.dtype)
        if x.is_meta:
            return x + encoding
        return x + encoding * torch.tensor(1.0)
