"""Correct: averages in place with SUM and a division by the group's size, but also returns the model (the spec asks for nothing to be returned, so a return value must be ignored)."""
import torch.distributed as dist

EXPECT_PASS = True


def average_gradients(model, group=None):
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    for g in grads:
        dist.all_reduce(g, op=dist.ReduceOp.SUM, group=group)
    scale = 1.0 / dist.get_world_size(group)
    for g in grads:
        g.mul_(scale)
    return model
