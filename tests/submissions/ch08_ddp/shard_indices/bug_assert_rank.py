"""Bug: validates the rank with assert, raising AssertionError instead of ValueError."""
import math

import torch

EXPECT_FAIL = {'invalid_rank_raises_value_error': 'assert raises AssertionError; raise ValueError'}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    assert 0 <= rank < world_size, f"invalid rank {rank}"
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
