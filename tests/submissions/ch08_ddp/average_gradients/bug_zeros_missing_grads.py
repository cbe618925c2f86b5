"""Bug: fills missing gradients with zeros before averaging, so parameters without a gradient end up with a zero .grad instead of None."""
import torch
import torch.distributed as dist

EXPECT_FAIL = {
    'skips_parameters_without_gradients': 'had no gradient',
}


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    for p in model.parameters():
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        dist.all_reduce(p.grad, group=group)
        p.grad /= n
