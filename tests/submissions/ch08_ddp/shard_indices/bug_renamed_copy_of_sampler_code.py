"""Bug: DistributedSampler.__iter__'s code object with another co_name, run on a stand-in object. (from an independent red team)."""
EXPECT_FAIL = {'does_not_use_the_sampler': 'shard_indices used torch.utils.data.DistributedSampler'}

import math
import types
from types import SimpleNamespace

import torch.utils.data.distributed as tud

_orig = vars(tud)["Distributed" "Sampler"].__dict__["__iter__"]
_code = _orig.__code__.replace(co_name="my_iter", co_qualname="my_iter")
_iter = types.FunctionType(_code, _orig.__globals__, "my_iter")


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    if drop_last and num_samples % world_size:
        per_rank = math.ceil((num_samples - world_size) / world_size)
    else:
        per_rank = math.ceil(num_samples / world_size)
    fake = SimpleNamespace(dataset=range(num_samples), num_replicas=world_size, rank=rank, epoch=epoch,
                           drop_last=drop_last, num_samples=per_rank, total_size=per_rank * world_size,
                           shuffle=shuffle, seed=seed)
    return list(_iter(fake))
