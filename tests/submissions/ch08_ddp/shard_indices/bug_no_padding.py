"""Bug: never pads, so with drop_last=False the ranks get unequal counts when world_size does not divide num_samples."""
import torch

EXPECT_FAIL = {
    'matches_the_sampler_in_order': 'no padding: when num_samples is not a',
    'matches_the_sampler_shuffled': 'no padding: when num_samples is not a',
    'more_ranks_than_samples': 'no padding: when num_samples is not a',
    'keeps_the_global_rng': 'no padding: when num_samples is not a',
    'does_not_use_the_sampler': 'no padding: when num_samples is not a',
}


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    if shuffle:
        g = torch.Generator().manual_seed(seed + epoch)
        indices = torch.randperm(num_samples, generator=g).tolist()
    else:
        indices = list(range(num_samples))
    if drop_last:
        indices = indices[: num_samples // world_size * world_size]
    return indices[rank::world_size]
