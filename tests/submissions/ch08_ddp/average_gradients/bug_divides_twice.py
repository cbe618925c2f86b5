"""Bug: divides by the world size both before and after the all_reduce, so every gradient is the mean divided once more by the number of ranks."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': 'divided twice',
    'averages_on_three_ranks': 'divided twice',
    'skips_parameters_without_gradients': 'divided twice',
    'averages_within_a_group': 'divided twice',
    'leaves_the_weights_alone': 'divided twice',
}


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    for p in model.parameters():
        if p.grad is None:
            continue
        p.grad /= n
        dist.all_reduce(p.grad, group=group)
        p.grad /= n
