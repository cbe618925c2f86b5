"""Correct: a hand-written ring (isend/irecv of each rank's original gradient around the group), any world size, group ranks mapped to global ranks. (from an independent red team)."""
EXPECT_PASS = True

import torch
import torch.distributed as dist


def average_gradients(model, group=None):
    size = dist.get_world_size(group)
    me = dist.get_rank(group)
    to_global = (lambda r: r) if group is None else (lambda r: dist.get_global_rank(group, r))
    right, left = to_global((me + 1) % size), to_global((me - 1) % size)
    for p in model.parameters():
        if p.grad is None:
            continue
        # (contiguous copies: send and recv take dense tensors, and a gradient may be laid out otherwise)
        total = p.grad.detach().clone(memory_format=torch.contiguous_format)
        passing = total.clone()
        for _ in range(size - 1):
            incoming = torch.empty_like(passing)
            reqs = [dist.isend(passing, right, group=group), dist.irecv(incoming, left, group=group)]
            for r in reqs:
                r.wait()
            total += incoming
            passing = incoming
        p.grad.copy_(total / size)
