"""Correct, written differently: column frequencies from j - j % 2, einsum in float32, sin/cos picked by torch.where."""
import torch
from torch import nn

EXPECT_PASS = True


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        if isinstance(dim, int) and dim >= 2 and dim % 2 == 0 and max_len >= 1:
            j = torch.arange(dim)
            freq = torch.pow(10000.0, -(j - j % 2).float() / dim)
            angles = torch.einsum("p,d->pd", torch.arange(max_len).float(), freq)
            pe = torch.where(j % 2 == 0, angles.sin(), angles.cos())
            self.register_buffer("pe", pe, persistent=False)
        else:
            raise ValueError(f"PositionalEncoding needs an even dim >= 2 and max_len >= 1, got {dim}, {max_len}")

    def forward(self, x):
        max_len, dim = self.pe.shape
        if x.dim() != 3 or x.size(2) != dim:
            raise ValueError(f"expected (batch, seq, {dim}), got {tuple(x.shape)}")
        if x.size(1) > max_len:
            raise ValueError(f"seq {x.size(1)} > max_len {max_len}")
        return x + self.pe.narrow(0, 0, x.size(1)).to(x.dtype).unsqueeze(0).expand_as(x)
