"""Bug: pads with a single copy of the order's start, too short when there are more than twice as many ranks as samples."""
import math

import torch

EXPECT_FAIL = {'more_ranks_than_samples': 'the padding is added only once: when'}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
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
        indices += indices[: total - len(indices)]
    return indices[rank:total:world_size]
