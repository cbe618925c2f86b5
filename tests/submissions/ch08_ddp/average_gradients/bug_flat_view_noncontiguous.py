"""Bug: flattens every gradient with .view(-1) into one buffer: a non-contiguous gradient (channels_last conv
weight) cannot be viewed, so it raises."""
EXPECT_FAIL = {"averages_generated_models": "raised RuntimeError"}
import torch
import torch.distributed as dist


def average_gradients(model, group=None):
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not grads:
        return
    flat = torch.cat([g.view(-1) for g in grads])
    dist.all_reduce(flat, group=group)
    flat /= dist.get_world_size(group)
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()
