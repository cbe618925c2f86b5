"""Bug: the shards are cached "because every epoch asks again" (functools.lru_cache), and the cached list itself is
returned: a caller that shuffles or extends its list changes what every later call with the same arguments gets.
Each first call is right."""
EXPECT_FAIL = {"matches_the_sampler_in_order": "keeps one list and returns it again"}

import functools

import torch


@functools.lru_cache(maxsize=None)
def _shard(num_samples, rank, world_size, shuffle, seed, epoch, drop_last):
    if drop_last and num_samples % world_size:
        per_rank = num_samples // world_size
    else:
        per_rank = -(-num_samples // world_size)
    total = per_rank * world_size
    if shuffle:
        order = torch.randperm(num_samples, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
    else:
        order = list(range(num_samples))
    if num_samples and total > len(order):
        order = (order * (total // len(order) + 1))[:total]
    return order[rank:total:world_size]


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not in [0, {world_size})")
    return _shard(num_samples, rank, world_size, shuffle, seed, epoch, drop_last)
