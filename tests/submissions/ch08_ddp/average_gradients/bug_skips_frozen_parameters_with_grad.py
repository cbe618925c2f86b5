"""Bug: averages only parameters with requires_grad=True, so a frozen parameter that still holds a .grad (every
parameter that has a gradient is averaged) keeps this rank's own gradient."""
import torch.distributed as dist

EXPECT_FAIL = {'averages_generated_models': 'requires_grad=False that still holds a .grad was skipped'}


def average_gradients(model, group=None):
    size = dist.get_world_size(group)
    for p in model.parameters():
        if p.requires_grad and p.grad is not None:
            dist.all_reduce(p.grad, group=group)
            p.grad /= size
