"""Bug: switches the profile function off around the DistributedSampler call, then puts it back. (from an independent red team)."""
EXPECT_FAIL = {'does_not_use_the_sampler': 'shard_indices used torch.utils.data.DistributedSampler'}

import sys
import torch.utils.data.distributed as tud


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    saved = sys.getprofile()
    sys.setprofile(None)
    try:
        s = tud.DistributedSampler(range(num_samples), num_replicas=world_size, rank=rank, shuffle=shuffle,
                                   seed=seed, drop_last=drop_last)
        s.set_epoch(epoch)
        result = list(s)
    finally:
        sys.setprofile(saved)
    return result
