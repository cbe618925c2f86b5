"""Bug: all_gathers the gradients (which already include its own) and adds its own gradient once more before the mean, so the local gradient is counted twice and the divisor is n + 1."""
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
        gathered = [torch.empty_like(p.grad) for _ in range(n)]
        dist.all_gather(gathered, p.grad, group=group)
        p.grad.copy_(torch.stack(gathered + [p.grad]).mean(dim=0))
