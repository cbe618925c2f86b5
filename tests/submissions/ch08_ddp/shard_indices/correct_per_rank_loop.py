"""Correct: a plain loop over this rank's positions, with manual wrap-around and the generator seeded once."""
import torch

EXPECT_PASS = True


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if world_size <= 0 or rank < 0 or rank > world_size - 1:
        raise ValueError("rank out of range")
    if shuffle:
        g = torch.Generator()
        g.manual_seed(int(seed) + int(epoch))
        perm = torch.randperm(num_samples, generator=g)
        order = [int(x) for x in perm]
    else:
        order = list(range(num_samples))

    count = num_samples // world_size
    if not drop_last and num_samples % world_size:
        count += 1
    result = []
    pos = rank
    for _ in range(count):
        result.append(order[pos % num_samples])
        pos += world_size
    return result
