"""Bug (state between calls): caches the world size from the first call, so a later call with another group divides by the wrong size. (from an independent red team)."""
EXPECT_FAIL = {
    'averages_within_a_group': "divided by 2 (an earlier call's group",
}

import torch
import torch.distributed as dist

_size = None


def average_gradients(model, group=None):
    global _size
    if _size is None:
        _size = dist.get_world_size(group)
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad, group=group)
                p.grad /= _size
