"""Bug: adds the averaged gradient to the existing .grad (p.grad += mean) instead of replacing it, so each gradient becomes the local one plus the mean."""
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
        if p.grad is None:
            continue
        mean = p.grad.clone()
        dist.all_reduce(mean, group=group)
        p.grad += mean / n
