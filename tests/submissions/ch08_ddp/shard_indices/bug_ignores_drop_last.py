"""Bug: always pads, even with drop_last=True."""
import math

import torch

EXPECT_FAIL = {
    'matches_the_sampler_in_order': 'drop_last is ignored: with drop_last=True the tail',
    'matches_the_sampler_shuffled': 'drop_last is ignored: with drop_last=True the tail',
    'more_ranks_than_samples': 'drop_last is ignored: with drop_last=True the tail',
    'does_not_use_the_sampler': 'drop_last is ignored: with drop_last=True the tail',
}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    if shuffle:
        g = torch.Generator().manual_seed(seed + epoch)
        indices = torch.randperm(num_samples, generator=g).tolist()
    else:
        indices = list(range(num_samples))
    total = math.ceil(num_samples / world_size) * world_size
    while len(indices) < total:
        indices += indices[: total - len(indices)]
    return indices[rank:total:world_size]
