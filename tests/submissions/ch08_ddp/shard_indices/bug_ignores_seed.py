"""Bug: seeds the generator with the epoch only, ignoring seed."""
import math

import torch

EXPECT_FAIL = {
    'matches_the_sampler_shuffled': 'the seed is ignored: the permutation is',
    'more_ranks_than_samples': 'the seed is ignored: the permutation is',
    'keeps_the_global_rng': 'the seed is ignored: the permutation is',
    'does_not_use_the_sampler': 'the seed is ignored: the permutation is',
}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    if shuffle:
        g = torch.Generator()
        g.manual_seed(epoch)
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
