"""BUG: adds in pe's dtype then casts the sum: (x.to(pe.dtype) + pe).to(x.dtype) rounds differently from x + pe.to(x.dtype)"""
EXPECT_FAIL = {"forward_adds_encoding": "cast back"}

import math
import torch
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, dim: int, max_len: int = 512):
        super().__init__()
        if dim < 2 or dim % 2 != 0:  #DIMCHECK
            raise ValueError(f"dim must be even and >= 2, got {dim}")
        if max_len < 1:  #LENCHECK
            raise ValueError(f"max_len must be >= 1, got {max_len}")
        self.dim = dim
        self.max_len = max_len
        pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
        i2 = torch.arange(0, dim, 2, dtype=torch.float64)
        angle = pos / (10000.0 ** (i2 / dim))  #ANGLE
        pe = torch.zeros(max_len, dim, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(angle)  #SIN
        pe[:, 1::2] = torch.cos(angle)  #COS
        self.register_buffer("pe", pe.float(), persistent=False)  #BUFFER

    def forward(self, x):
        if x.dim() != 3:  #NDIM
            raise ValueError(f"expected (batch, seq, dim), got {tuple(x.shape)}")
        if x.shape[-1] != self.dim:  #LASTDIM
            raise ValueError(f"last dim {x.shape[-1]} != {self.dim}")
        seq = x.shape[1]
        if seq > self.max_len:  #SEQ
            raise ValueError(f"seq {seq} > max_len {self.max_len}")
        return (x.to(self.pe.dtype) + self.pe[:seq]).to(x.dtype)  #RETURN
