"""Bug: averages one flat buffer of all gradients but copies it back without advancing the offset, so every gradient receives the first parameter's values."""
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
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, group=group)
    flat /= dist.get_world_size(group)
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
