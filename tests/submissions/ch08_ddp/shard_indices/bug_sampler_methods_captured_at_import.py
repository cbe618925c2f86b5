"""Bug: hostile -- grabs DistributedSampler's __init__ and __iter__ when the module is imported and runs them on its own object."""
import torch.utils.data.distributed as tud

EXPECT_FAIL = {'does_not_use_the_sampler': 'shard_indices used torch.utils.data.DistributedSampler'}

_cls = vars(tud)["Distributed" "Sampler"]
_init, _iter = _cls.__init__, _cls.__iter__


class _Shards:
    pass


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    s = _Shards()
    _init(s, range(num_samples), world_size, rank, shuffle, seed, drop_last)
    s.epoch = epoch
    return list(_iter(s))
