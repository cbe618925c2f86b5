"""Bug: hostile -- copies DistributedSampler's source with inspect and execs it under another name, so its code yields the indices."""
import inspect

import torch.utils.data.distributed as tud

EXPECT_FAIL = {'does_not_use_the_sampler': 'shard_indices used torch.utils.data.DistributedSampler'}

_ns = dict(vars(tud))
exec(inspect.getsource(tud.DistributedSampler).replace("class DistributedSampler", "class Shards"), _ns)


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    sampler = _ns["Shards"](range(num_samples), world_size, rank, shuffle, seed, drop_last)
    sampler.set_epoch(epoch)
    return [int(i) for i in sampler]
