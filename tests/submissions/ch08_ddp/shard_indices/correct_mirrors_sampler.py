"""Correct: the sampler's own steps re-written as a function (private generator, pad by repeating, stride)."""
import math

import torch

EXPECT_PASS = True


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if rank < 0 or rank >= world_size:
        raise ValueError(f"rank {rank} is not in [0, {world_size})")
    if drop_last and num_samples % world_size != 0:
        per_rank = math.ceil((num_samples - world_size) / world_size)
    else:
        per_rank = math.ceil(num_samples / world_size)
    total = per_rank * world_size

    if shuffle:
        g = torch.Generator()
        g.manual_seed(seed + epoch)
        indices = torch.randperm(num_samples, generator=g).tolist()
    else:
        indices = list(range(num_samples))

    if not drop_last:
        padding = total - len(indices)
        if padding <= len(indices):
            indices += indices[:padding]
        else:
            indices += (indices * math.ceil(padding / len(indices)))[:padding]
    else:
        indices = indices[:total]
    return indices[rank:total:world_size]
