"""Correct: resolves group None to dist.group.WORLD, counts the group's ranks by all_reducing a tensor of ones (no get_world_size), then all_reduces each gradient's .data and divides it by that count."""
import torch
import torch.distributed as dist

EXPECT_PASS = True


def average_gradients(model, group=None):
    if group is None:
        group = dist.group.WORLD
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not grads:
        return
    count = torch.ones(1, dtype=grads[0].dtype, device=grads[0].device)
    dist.all_reduce(count, group=group)
    for g in grads:
        dist.all_reduce(g.data, group=group)
        g.data.div_(count)
