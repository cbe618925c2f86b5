"""Bug: divides by dist.get_rank(group) + 1 instead of the world size (confusing rank with size), so each rank gets a different result."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': 'the gradients were summed but not divided',
    'averages_on_three_ranks': 'the gradients were summed but not divided',
    'skips_parameters_without_gradients': 'the gradients were summed but not divided',
    'averages_within_a_group': 'the gradients were summed but not divided',
    'leaves_the_weights_alone': 'the gradients were summed but not divided',
}


def average_gradients(model, group=None):
    n = dist.get_rank(group) + 1
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, group=group)
            p.grad /= n
