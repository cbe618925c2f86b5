"""Bug: uses floor division (//=) to divide the summed gradients, which rounds every value down to a whole number."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': 'is not the mean over the ranks [0',
    'averages_on_three_ranks': 'is not the mean over the ranks [0',
    'skips_parameters_without_gradients': 'is not the mean over the ranks [0',
    'averages_within_a_group': 'is not the mean over the ranks [1',
    'leaves_the_weights_alone': 'is not the mean over the ranks [0',
}


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, group=group)
            p.grad //= n
