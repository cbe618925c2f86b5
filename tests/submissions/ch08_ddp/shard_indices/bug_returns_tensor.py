"""Bug: returns a LongTensor of the indices instead of a list of ints."""
import math

import torch

EXPECT_FAIL = {
    'matches_the_sampler_in_order': 'returned a tensor',
    'matches_the_sampler_shuffled': 'returned a tensor',
    'more_ranks_than_samples': 'returned a tensor',
    'keeps_the_global_rng': 'returned a tensor',
    'does_not_use_the_sampler': 'returned a tensor',
    'invalid_rank_raises_value_error': 'returned a tensor',
}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    if shuffle:
        g = torch.Generator().manual_seed(seed + epoch)
        order = torch.randperm(num_samples, generator=g)
    else:
        order = torch.arange(num_samples)
    if drop_last:
        total = num_samples // world_size * world_size
    else:
        total = math.ceil(num_samples / world_size) * world_size
    if total == 0:
        return torch.empty(0, dtype=torch.long)
    return order[torch.arange(rank, total, world_size) % num_samples]
