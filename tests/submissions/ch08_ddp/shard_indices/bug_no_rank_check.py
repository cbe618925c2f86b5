"""Bug: never validates rank; an out-of-range rank just returns a short or empty list."""
import math

import torch

EXPECT_FAIL = {'invalid_rank_raises_value_error': 'no check of rank at the top'}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if world_size < 1:
        return []
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
