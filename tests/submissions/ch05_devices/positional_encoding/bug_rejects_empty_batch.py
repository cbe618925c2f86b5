"""Bug: rejects an empty batch (x.shape[0] == 0) with ValueError; the spec allows any batch, 0 included (x + pe[:seq]
broadcasts over it), and raises only for the dims, the last dim and seq > max_len."""
import math

import torch
from torch import nn

EXPECT_FAIL = {'generated_modules_and_inputs': 'raised ValueError'}


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        if dim < 2 or dim % 2:
            raise ValueError("dim must be even and >= 2")
        if max_len < 1:
            raise ValueError("max_len must be >= 1")
        position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64) * (-math.log(10000.0) / dim))
        pe = torch.zeros(max_len, dim, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.float(), persistent=False)

    def forward(self, x):
        if x.dim() != 3 or x.size(-1) != self.pe.size(1):
            raise ValueError("x must have shape (batch, seq, dim)")
        if x.size(0) < 1:
            raise ValueError("the batch is empty")
        if x.size(1) > self.pe.size(0):
            raise ValueError("the sequence is longer than max_len")
        return x + self.pe[: x.size(1)].to(x.dtype)
