"""Bug: returns list(tensor), a list of 0-d tensors rather than of ints."""
import math

import torch

EXPECT_FAIL = {
    'matches_the_sampler_in_order': 'returned a list holding a torch.Tensor',
    'matches_the_sampler_shuffled': 'returned a list holding a torch.Tensor',
    'more_ranks_than_samples': 'returned a list holding a torch.Tensor',
    'keeps_the_global_rng': 'returned a list holding a torch.Tensor',
    'does_not_use_the_sampler': 'returned a list holding a torch.Tensor',
    'invalid_rank_raises_value_error': 'returned a list holding a torch.Tensor',
}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    if shuffle:
        g = torch.Generator().manual_seed(seed + epoch)
        indices = list(torch.randperm(num_samples, generator=g))
    else:
        indices = list(torch.arange(num_samples))
    if drop_last:
        total = num_samples // world_size * world_size
        indices = indices[:total]
    else:
        total = math.ceil(num_samples / world_size) * world_size
        while len(indices) < total:
            indices += indices[: total - len(indices)]
    return indices[rank:total:world_size]
