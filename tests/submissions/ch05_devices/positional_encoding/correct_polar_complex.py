"""Correct, written differently: e^(i*angle) via torch.polar in complex128, (sin, cos) pairs read off view_as_real."""
import torch
from torch import nn

EXPECT_PASS = True


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        if not (dim >= 2 and dim % 2 == 0 and max_len >= 1):
            raise ValueError(f"bad arguments: dim={dim}, max_len={max_len}")
        freqs = 10000.0 ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
        angles = torch.outer(torch.arange(max_len, dtype=torch.float64), freqs)
        z = torch.polar(torch.ones_like(angles), angles)
        pe = torch.view_as_real(z).flip(-1).reshape(max_len, dim)
        self.register_buffer("pe", pe.to(torch.get_default_dtype()), persistent=False)

    def forward(self, x):
        if x.dim() != 3 or x.shape[-1] != self.pe.shape[-1] or x.shape[-2] > len(self.pe):
            raise ValueError(f"x of shape {tuple(x.shape)} does not fit a table of shape {tuple(self.pe.shape)}")
        return torch.add(x, self.pe[: x.shape[-2]].to(dtype=x.dtype))
