"""Correct: the careful student's loop: all_reduce each existing gradient with SUM over the group, then divide by the group's size under no_grad."""
import torch
import torch.distributed as dist

EXPECT_PASS = True


def average_gradients(model, group=None):
    world_size = dist.get_world_size(group=group)
    with torch.no_grad():
        for param in model.parameters():
            if param.grad is None:
                continue
            dist.all_reduce(param.grad, op=dist.ReduceOp.SUM, group=group)
            param.grad /= world_size
