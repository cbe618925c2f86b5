"""Correct: dist.all_reduce_coalesced on the list of gradients (one call), then divides. (from an independent red team)."""
EXPECT_PASS = True

import torch
import torch.distributed as dist


def average_gradients(model, group=None):
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not grads:
        return
    for dtype in {g.dtype for g in grads}:
        same = [g for g in grads if g.dtype == dtype]
        dist.all_reduce_coalesced(same, group=group)
        for g in same:
            g.div_(dist.get_world_size(group))
