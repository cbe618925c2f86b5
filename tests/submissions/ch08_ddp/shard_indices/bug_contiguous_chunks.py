"""Bug: gives each rank a contiguous block of the order instead of every world_size-th index."""
import math

import torch

EXPECT_FAIL = {
    'matches_the_sampler_in_order': 'contiguous blocks: DistributedSampler gives rank r every',
    'matches_the_sampler_shuffled': 'contiguous blocks: DistributedSampler gives rank r every',
    'keeps_the_global_rng': 'contiguous blocks: DistributedSampler gives rank r every',
    'does_not_use_the_sampler': 'contiguous blocks: DistributedSampler gives rank r every',
    'invalid_rank_raises_value_error': 'contiguous blocks: DistributedSampler gives rank r every',
}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    if shuffle:
        g = torch.Generator().manual_seed(seed + epoch)
        indices = torch.randperm(num_samples, generator=g).tolist()
    else:
        indices = list(range(num_samples))
    per_rank = num_samples // world_size if drop_last else math.ceil(num_samples / world_size)
    total = per_rank * world_size
    while len(indices) < total:
        indices += indices[: total - len(indices)]
    return indices[rank * per_rank:(rank + 1) * per_rank]
