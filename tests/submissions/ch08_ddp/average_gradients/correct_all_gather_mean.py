"""Correct: all_gathers every gradient from the group's ranks and takes the mean of the stacked copies."""
import torch
import torch.distributed as dist

EXPECT_PASS = True


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    for p in model.parameters():
        if p.grad is None:
            continue
        gathered = [torch.empty_like(p.grad) for _ in range(n)]
        dist.all_gather(gathered, p.grad.contiguous(), group=group)
        p.grad.copy_(torch.stack(gathered).mean(dim=0))
