"""Bug: averages one flat buffer of all gradients but copies it back without advancing the offset, so every gradient receives the first parameter's values."""
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
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, group=group)
    flat /= dist.get_world_size(group)
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
