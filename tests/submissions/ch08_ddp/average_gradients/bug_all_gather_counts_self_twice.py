"""Bug: all_gathers the gradients (which already include its own) and adds its own gradient once more before the mean, so the local gradient is counted twice and the divisor is n + 1."""
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
        gathered = [torch.empty_like(p.grad) for _ in range(n)]
        dist.all_gather(gathered, p.grad, group=group)
        p.grad.copy_(torch.stack(gathered + [p.grad]).mean(dim=0))
