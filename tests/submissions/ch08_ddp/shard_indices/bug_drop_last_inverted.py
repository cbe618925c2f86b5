"""Bug: has drop_last backwards -- pads when it is True and drops the tail when it is False."""
import math

import torch

EXPECT_FAIL = {
    'matches_the_sampler_in_order': 'drop_last works the wrong way round',
    'matches_the_sampler_shuffled': 'drop_last works the wrong way round',
    'more_ranks_than_samples': 'drop_last works the wrong way round',
    'keeps_the_global_rng': 'drop_last works the wrong way round',
    'does_not_use_the_sampler': 'drop_last works the wrong way round',
}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    if shuffle:
        g = torch.Generator().manual_seed(seed + epoch)
        indices = torch.randperm(num_samples, generator=g).tolist()
    else:
        indices = list(range(num_samples))
    if not drop_last:
        total = num_samples // world_size * world_size
        indices = indices[:total]
    else:
        total = math.ceil(num_samples / world_size) * world_size
        while len(indices) < total:
            indices += indices[: total - len(indices)]
    return indices[rank:total:world_size]
