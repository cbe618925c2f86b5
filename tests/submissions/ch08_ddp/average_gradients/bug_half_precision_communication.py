"""Bug: compresses the gradients to float16 for the all_reduce (like DDP's fp16 compression hook) and casts back, losing far more precision than the 1e-5 relative tolerance allows."""
import torch
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
        half = p.grad.to(torch.float16)
        dist.all_reduce(half, group=group)
        p.grad.copy_(half / n)
