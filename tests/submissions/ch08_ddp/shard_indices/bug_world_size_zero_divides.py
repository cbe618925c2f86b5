"""Bug: computes the per-rank count before validating the rank, so world_size=0 raises ZeroDivisionError, not ValueError."""
import math

import torch

EXPECT_FAIL = {
    'invalid_rank_raises_value_error': 'the specification asks for ValueError; raise ValueError',
}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    per_rank = num_samples // world_size if drop_last else math.ceil(num_samples / world_size)
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    total = per_rank * world_size
    if shuffle:
        g = torch.Generator().manual_seed(seed + epoch)
        indices = torch.randperm(num_samples, generator=g).tolist()
    else:
        indices = list(range(num_samples))
    while len(indices) < total:
        indices += indices[: total - len(indices)]
    return indices[:total][rank::world_size]
