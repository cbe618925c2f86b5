"""Correct: all tensor ops -- an int32 randperm, positions arange(rank, total, world_size) % n gathered by indexing."""
import torch

EXPECT_PASS = True


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if rank >= world_size or rank < 0:
        raise ValueError("rank must satisfy 0 <= rank < world_size")
    if drop_last:
        total = num_samples - num_samples % world_size
    else:
        total = (num_samples + world_size - 1) // world_size * world_size
    if total == 0:
        return []
    gen = torch.Generator(device="cpu")
    gen.manual_seed(seed + epoch)
    if shuffle:
        order = torch.randperm(num_samples, generator=gen, dtype=torch.int32)
    else:
        order = torch.arange(num_samples)
    positions = torch.arange(rank, total, world_size) % num_samples
    return [int(i) for i in order[positions]]
