"""Bug: only checks rank >= world_size, so a negative rank is accepted (and silently indexes from the end)."""
import math

import torch

EXPECT_FAIL = {'invalid_rank_raises_value_error': 'negative ranks are let through'}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if rank >= world_size:
        raise ValueError("bad rank")
    if shuffle:
        g = torch.Generator().manual_seed(seed + epoch)
        indices = torch.randperm(num_samples, generator=g).tolist()
    else:
        indices = list(range(num_samples))
    if drop_last:
        total = num_samples // world_size * world_size
        indices = indices[:total]
    else:
        total = math.ceil(num_samples / world_size) * world_size
        while len(indices) < total:
            indices += indices[: total - len(indices)]
    return indices[rank:total:world_size]
