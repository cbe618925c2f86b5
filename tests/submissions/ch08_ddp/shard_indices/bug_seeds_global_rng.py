"""Bug: calls torch.manual_seed(seed + epoch) and the global randperm, which changes the global RNG state."""
import math

import torch

EXPECT_FAIL = {
    'keeps_the_global_rng': 'torch.manual_seed reseeds the global generator for everybody',
}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    if shuffle:
        torch.manual_seed(seed + epoch)
        indices = torch.randperm(num_samples).tolist()
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
