"""Bug: divides the sum by world_size - 1 (counting only the "other" ranks), so the result is larger than the mean."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': 'the gradients were summed but not divided',
    'averages_on_three_ranks': 'is not the mean over the ranks [0',
    'skips_parameters_without_gradients': 'the gradients were summed but not divided',
    'averages_within_a_group': 'the gradients were summed but not divided',
    'leaves_the_weights_alone': 'the gradients were summed but not divided',
}


def average_gradients(model, group=None):
    others = dist.get_world_size(group) - 1
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, group=group)
            p.grad /= others
