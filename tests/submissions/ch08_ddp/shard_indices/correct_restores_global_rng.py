"""Correct: seeds the global RNG inside torch.random.fork_rng, so its state is restored afterwards; slices each
rank's stride first and truncates it for drop_last."""
import itertools

import torch

EXPECT_PASS = True


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not (0 <= rank < world_size):
        raise ValueError(f"invalid rank {rank} for world_size {world_size}")
    if shuffle:
        with torch.random.fork_rng(devices=[]):  # the CPU generator's state is restored afterwards
            torch.default_generator.manual_seed(seed + epoch)  # (torch.manual_seed would seed CUDA's too, unrestored)
            order = torch.randperm(num_samples).tolist()
    else:
        order = list(range(num_samples))
    if drop_last:
        return order[rank::world_size][: num_samples // world_size]
    per_rank = -(-num_samples // world_size)
    cycled = itertools.islice(itertools.cycle(order), per_rank * world_size)
    return list(itertools.islice(cycled, rank, None, world_size))
