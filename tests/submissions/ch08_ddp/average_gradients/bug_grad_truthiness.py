"""Bug: tests `if not p.grad` instead of `p.grad is None`, which raises "Boolean value of Tensor with more than one value is ambiguous" on every real gradient."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': 'raised RuntimeError',
    'averages_on_three_ranks': 'raised RuntimeError',
    'skips_parameters_without_gradients': 'raised RuntimeError',
    'averages_within_a_group': 'raised RuntimeError',
    'leaves_the_weights_alone': 'raised RuntimeError',
}


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    for p in model.parameters():
        if not p.grad:
            continue
        dist.all_reduce(p.grad, group=group)
        p.grad /= n
