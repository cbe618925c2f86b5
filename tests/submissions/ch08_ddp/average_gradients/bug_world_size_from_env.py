"""Bug: divides by int(os.environ["WORLD_SIZE"]) (what torchrun sets) instead of the size of the group: with a sub-group of 2 out of 3 ranks the sum is divided by 3."""
import os

import torch.distributed as dist

EXPECT_FAIL = {
    'averages_within_a_group': "divided by the default group's size (3)",
}


def average_gradients(model, group=None):
    n = int(os.environ["WORLD_SIZE"])
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, group=group)
            p.grad /= n
