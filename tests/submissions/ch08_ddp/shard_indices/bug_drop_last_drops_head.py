"""Bug: with drop_last drops the first num_samples % world_size indices instead of the tail."""
import math

import torch

EXPECT_FAIL = {
    'matches_the_sampler_in_order': 'shard_indices returned other indices than DistributedSampler gives',
    'matches_the_sampler_shuffled': 'shard_indices returned other indices than DistributedSampler gives',
    'does_not_use_the_sampler': 'shard_indices returned other indices than DistributedSampler gives',
}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    if shuffle:
        g = torch.Generator().manual_seed(seed + epoch)
        indices = torch.randperm(num_samples, generator=g).tolist()
    else:
        indices = list(range(num_samples))
    if drop_last:
        indices = indices[num_samples % world_size:]
        total = len(indices)
    else:
        total = math.ceil(num_samples / world_size) * world_size
        while len(indices) < total:
            indices += indices[: total - len(indices)]
    return indices[rank:total:world_size]
