"""Correct: reduces each gradient onto the group's first rank, which divides, then broadcasts the mean back to the group (two collectives instead of all_reduce)."""
import torch.distributed as dist

EXPECT_PASS = True


def average_gradients(model, group=None):
    root = 0 if group is None else dist.get_process_group_ranks(group)[0]
    size = dist.get_world_size(group)
    for param in model.parameters():
        if param.grad is None:
            continue
        dist.reduce(param.grad, dst=root, group=group)
        if dist.get_rank() == root:
            param.grad.div_(size)
        dist.broadcast(param.grad, src=root, group=group)
