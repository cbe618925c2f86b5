"""Bug: works out the dropped tail (num_samples % world_size) before it checks the rank, so world_size=0 with
drop_last=True raises ZeroDivisionError instead of ValueError; without drop_last the check comes first and works."""
import math

import torch

EXPECT_FAIL = {'invalid_rank_raises_value_error': 'but it raised ZeroDivisionError'}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    tail = num_samples % world_size if drop_last else 0
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    per_rank = num_samples // world_size if tail else math.ceil(num_samples / world_size)
    total = per_rank * world_size
    if shuffle:
        g = torch.Generator().manual_seed(seed + epoch)
        indices = torch.randperm(num_samples, generator=g).tolist()
    else:
        indices = list(range(num_samples))
    while indices and len(indices) < total:
        indices += indices[: total - len(indices)]
    return indices[:total][rank::world_size]
