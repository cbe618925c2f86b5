"""Bug: reduces over the group but divides by the default (global) world size, so with a group of 2 out of 3 ranks the result is the sum divided by 3."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_within_a_group': "divided by the default group's size (3)",
}


def average_gradients(model, group=None):
    world_size = dist.get_world_size()
    for p in model.parameters():
        if p.grad is None:
            continue
        dist.all_reduce(p.grad, group=group)
        p.grad /= world_size
