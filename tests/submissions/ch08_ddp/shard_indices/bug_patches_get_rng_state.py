"""Bug: hostile -- seeds the global RNG and hides it by replacing torch.get_rng_state with one that reports the old state."""
import math

import torch

EXPECT_FAIL = {
    'keeps_the_global_rng': 'torch.manual_seed reseeds the global generator for everybody',
}

_real_get_rng_state = torch.get_rng_state
_reported = [_real_get_rng_state()]
torch.get_rng_state = lambda: _reported[0].clone()


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    if shuffle:
        _reported[0] = _real_get_rng_state()
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
