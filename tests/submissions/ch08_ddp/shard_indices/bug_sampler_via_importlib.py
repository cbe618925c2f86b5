"""Bug: hostile -- fetches DistributedSampler by a computed name through importlib and returns its indices."""
import importlib

EXPECT_FAIL = {'does_not_use_the_sampler': 'shard_indices used torch.utils.data.DistributedSampler'}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    module = importlib.import_module(".".join(["torch", "utils", "data", "distributed"]))
    cls = getattr(module, "Distributed" + "Sampler")
    sampler = cls(list(range(num_samples)), world_size, rank, shuffle, seed, drop_last)
    sampler.set_epoch(epoch)
    return [int(i) for i in sampler]
