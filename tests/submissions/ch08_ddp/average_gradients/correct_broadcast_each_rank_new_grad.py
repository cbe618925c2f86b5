"""Correct: each rank of the group broadcasts its gradient in turn; the sum is accumulated in float64 and a NEW tensor is assigned to .grad (the old grad object is not updated in place)."""
import torch
import torch.distributed as dist

EXPECT_PASS = True


def average_gradients(model, group=None):
    if group is None:
        ranks = list(range(dist.get_world_size()))
    else:
        ranks = dist.get_process_group_ranks(group)
    me = dist.get_rank()
    for p in model.parameters():
        if p.grad is None:
            continue
        total = torch.zeros_like(p.grad, dtype=torch.float64)
        for src in ranks:
            piece = p.grad.clone() if src == me else torch.empty_like(p.grad)
            dist.broadcast(piece, src=src, group=group)
            total += piece
        p.grad = (total / len(ranks)).to(p.grad.dtype)
