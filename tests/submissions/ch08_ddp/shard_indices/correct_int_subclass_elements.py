"""Correct: a list whose elements are an int subclass (isinstance(i, int) is True). (from an independent red team)."""
EXPECT_PASS = True

import torch


class Index(int):
    pass


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    g = torch.Generator().manual_seed(seed + epoch)
    order = torch.randperm(num_samples, generator=g).tolist() if shuffle else list(range(num_samples))
    per_rank = num_samples // world_size if drop_last else -(-num_samples // world_size)
    return [Index(order[j % num_samples]) for j in range(rank, per_rank * world_size, world_size)]
