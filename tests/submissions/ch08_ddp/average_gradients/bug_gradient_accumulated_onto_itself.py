"""Bug: adds the averaged gradient to the existing .grad (p.grad += mean) instead of replacing it, so each gradient becomes the local one plus the mean."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': 'on rank 0 of 2, the gradient',
    'averages_on_three_ranks': 'on rank 0 of 3, the gradient',
    'skips_parameters_without_gradients': 'on rank 0 of 2, the gradient',
    'averages_within_a_group': 'on rank 0 of 3, the gradient',
    'leaves_the_weights_alone': 'on rank 0 of 2, the gradient',
}


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    for p in model.parameters():
        if p.grad is None:
            continue
        mean = p.grad.clone()
        dist.all_reduce(mean, group=group)
        p.grad += mean / n
