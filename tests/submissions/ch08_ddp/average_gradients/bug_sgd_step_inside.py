"""Bug: after averaging the gradients it also takes an SGD step (p -= lr * grad), so the weights change."""
import torch
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': 'changed',
    'averages_on_three_ranks': 'changed',
    'skips_parameters_without_gradients': 'changed',
    'averages_within_a_group': 'changed',
    'leaves_the_weights_alone': 'changed',
}


def average_gradients(model, group=None, lr=0.01):
    n = dist.get_world_size(group)
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is None:
                continue
            dist.all_reduce(p.grad, group=group)
            p.grad /= n
            p -= lr * p.grad
