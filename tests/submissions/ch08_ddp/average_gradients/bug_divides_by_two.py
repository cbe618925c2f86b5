"""Bug: divides the summed gradients by a hard-coded 2 (the world size of the notebook's runs), which is wrong for any other number of ranks."""
import torch.distributed as dist

EXPECT_FAIL = {'averages_on_three_ranks': 'on rank 0 of 3, the gradient'}


def average_gradients(model, group=None):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, group=group)
            p.grad /= 2
