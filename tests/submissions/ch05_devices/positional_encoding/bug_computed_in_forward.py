"""Bug: no pe buffer at all; forward recomputes the encoding on x's device at every call."""
import torch
from torch import nn

EXPECT_FAIL = {
    'encoding_values': 'no attribute `pe`',
    'buffer_not_parameter': 'no attribute `pe`',
}


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        if dim < 2 or dim % 2:
            raise ValueError("dim must be even and >= 2")
        if max_len < 1:
            raise ValueError("max_len must be >= 1")
        self.dim, self.max_len = dim, max_len

    def forward(self, x):
        if x.dim() != 3 or x.size(-1) != self.dim:
            raise ValueError("x must have shape (batch, seq, dim)")
        if x.size(1) > self.max_len:
            raise ValueError("sequence longer than max_len")
        pos = torch.arange(x.size(1), device=x.device, dtype=torch.float32)[:, None]
        freq = 10000 ** (-torch.arange(0, self.dim, 2, device=x.device, dtype=torch.float32) / self.dim)
        pe = torch.stack(((pos * freq).sin(), (pos * freq).cos()), dim=-1).flatten(1)
        return x + pe.to(x.dtype)
