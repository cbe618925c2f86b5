"""Correct: numpy for the padding and striding; torch.randperm with a private generator for the order. (from an independent red team)."""
EXPECT_PASS = True

import numpy as np
import torch


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} not in [0, {world_size})")
    if shuffle:
        order = torch.randperm(num_samples, generator=torch.Generator().manual_seed(seed + epoch)).numpy()
    else:
        order = np.arange(num_samples)
    per_rank = num_samples // world_size if drop_last else -(-num_samples // world_size)
    total = per_rank * world_size
    if total == 0:
        return []
    padded = np.resize(order, total)  # np.resize repeats the array cyclically
    return padded[rank::world_size].tolist()
