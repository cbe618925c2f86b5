"""Bug: all_reduces the gradients with SUM but never divides, so every gradient is the sum over the ranks, not the mean."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': 'the gradients were summed but not divided',
    'averages_on_three_ranks': 'the gradients were summed but not divided',
    'skips_parameters_without_gradients': 'the gradients were summed but not divided',
    'averages_within_a_group': 'the gradients were summed but not divided',
    'leaves_the_weights_alone': 'the gradients were summed but not divided',
}


def average_gradients(model, group=None):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, op=dist.ReduceOp.SUM, group=group)
