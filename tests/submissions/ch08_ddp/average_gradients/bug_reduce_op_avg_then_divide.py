"""Bug: all_reduces with ReduceOp.AVG, which already averages, and then divides by the world size again."""
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
        if p.grad is not None:
            dist.all_reduce(p.grad, op=dist.ReduceOp.AVG, group=group)
            p.grad.div_(n)
