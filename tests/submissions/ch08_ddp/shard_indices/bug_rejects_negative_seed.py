"""Bug (for some seeds only): raises ValueError for a negative seed + epoch, which DistributedSampler accepts (torch.Generator.manual_seed takes negative seeds). E.g. shard_indices(10, 0, 2, seed=-3) must give the sampler's list. (from an independent red team)."""
EXPECT_FAIL = {'matches_the_sampler_shuffled': 'raised ValueError'}

import torch


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    if seed + epoch < 0:
        raise ValueError("seed must be non-negative")
    g = torch.Generator().manual_seed(seed + epoch)
    order = torch.randperm(num_samples, generator=g).tolist() if shuffle else list(range(num_samples))
    per_rank = num_samples // world_size if drop_last else -(-num_samples // world_size)
    return [order[j % num_samples] for j in range(rank, per_rank * world_size, world_size)]
