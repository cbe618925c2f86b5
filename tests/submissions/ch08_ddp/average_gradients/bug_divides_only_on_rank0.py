"""Bug: all_reduce (SUM) on every rank, but the division only on the group's first rank; other ranks keep the sum. (from an independent red team)."""
EXPECT_FAIL = {
    'averages_on_two_ranks': 'the gradients were summed but not divided',
    'averages_on_three_ranks': 'the gradients were summed but not divided',
    'skips_parameters_without_gradients': 'the gradients were summed but not divided',
    'averages_within_a_group': 'the gradients were summed but not divided',
    'leaves_the_weights_alone': 'the gradients were summed but not divided',
}

import torch
import torch.distributed as dist


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    first = dist.get_rank(group) == 0
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad, group=group)
                if first:
                    p.grad /= n
