"""Bug: builds a DistributedSampler over range(num_samples) and returns what it yields."""
from torch.utils.data import DistributedSampler

EXPECT_FAIL = {'does_not_use_the_sampler': 'shard_indices used torch.utils.data.DistributedSampler'}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    sampler = DistributedSampler(range(num_samples), num_replicas=world_size, rank=rank,
                                 shuffle=shuffle, seed=seed, drop_last=drop_last)
    sampler.set_epoch(epoch)
    return list(sampler)
