"""Bug: defaults shuffle to False, so a call without shuffle= gives the unshuffled order."""
import math

import torch

EXPECT_FAIL = {
    'matches_the_sampler_shuffled': 'shard_indices returned other indices than DistributedSampler gives',
    'more_ranks_than_samples': 'shard_indices returned other indices than DistributedSampler gives',
    'keeps_the_global_rng': 'shuffle defaults to False',
    'does_not_use_the_sampler': 'shard_indices returned other indices than DistributedSampler gives',
}


def shard_indices(num_samples, rank, world_size, *, shuffle=False, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
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
