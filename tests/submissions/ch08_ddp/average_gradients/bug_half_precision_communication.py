"""Bug: compresses the gradients to float16 for the all_reduce (like DDP's fp16 compression hook) and casts back, losing far more precision than the 1e-5 relative tolerance allows."""
import torch
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
        half = p.grad.to(torch.float16)
        dist.all_reduce(half, group=group)
        p.grad.copy_(half / n)
