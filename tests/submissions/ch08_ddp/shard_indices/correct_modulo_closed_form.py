"""Correct: integer arithmetic for the per-rank count and a closed form order[j % n] for the padded positions."""
import torch

EXPECT_PASS = True


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    n = num_samples
    per_rank = n // world_size if drop_last else -(-n // world_size)
    if shuffle:
        order = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
    else:
        order = range(n)
    return [order[j % n] for j in range(rank, per_rank * world_size, world_size)]
