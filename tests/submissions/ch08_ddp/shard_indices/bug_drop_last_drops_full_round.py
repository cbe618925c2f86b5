"""Bug: with drop_last uses ceil((n - world_size) / world_size) even when world_size divides n, losing a whole round."""
import math

import torch

EXPECT_FAIL = {
    'matches_the_sampler_in_order': 'with drop_last a whole round is dropped',
    'matches_the_sampler_shuffled': 'with drop_last a whole round is dropped',
}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    if drop_last:
        per_rank = math.ceil((num_samples - world_size) / world_size)
    else:
        per_rank = math.ceil(num_samples / world_size)
    total = per_rank * world_size
    if shuffle:
        g = torch.Generator().manual_seed(seed + epoch)
        indices = torch.randperm(num_samples, generator=g).tolist()
    else:
        indices = list(range(num_samples))
    while len(indices) < total:
        indices += indices[: total - len(indices)]
    return indices[:total][rank::world_size]
