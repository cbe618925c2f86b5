"""Bug: after averaging the gradients it also takes an SGD step (p -= lr * grad), so the weights change."""
import torch
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': 'on rank 0 of 2, the parameter',
    'averages_on_three_ranks': 'on rank 0 of 3, the parameter',
    'skips_parameters_without_gradients': 'on rank 0 of 2, the parameter',
    'averages_within_a_group': 'on rank 0 of 3, the parameter',
    'leaves_the_weights_alone': 'on rank 0 of 2, the parameter',
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
