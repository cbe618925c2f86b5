"""Bug: all the sines in the first half of the columns and all the cosines in the second, not interleaved."""
import torch
from torch import nn

EXPECT_FAIL = {'encoding_values': 'must alternate'}


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        if dim < 2 or dim % 2:
            raise ValueError("dim must be even and >= 2")
        if max_len < 1:
            raise ValueError("max_len must be >= 1")
        freqs = 1.0 / 10000 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
        angles = torch.outer(torch.arange(max_len, dtype=torch.float32), freqs)
        self.register_buffer("pe", torch.cat([angles.sin(), angles.cos()], dim=-1), persistent=False)

    def forward(self, x):
        if x.dim() != 3 or x.size(-1) != self.pe.size(1):
            raise ValueError("x must have shape (batch, seq, dim)")
        if x.size(1) > self.pe.size(0):
            raise ValueError("sequence longer than max_len")
        return x + self.pe[: x.size(1)].to(x.dtype)
