"""Bug: seeds the global RNG and then 'restores' it with torch.manual_seed(torch.initial_seed()), which rewinds its state instead of restoring it."""
import math

import torch

EXPECT_FAIL = {'keeps_the_global_rng': 'a draw from the global generator'}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    if shuffle:
        old_seed = torch.initial_seed()
        torch.manual_seed(seed + epoch)
        indices = torch.randperm(num_samples).tolist()
        torch.manual_seed(old_seed)
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
