"""Bug: after the DDP backward it all-reduces every gradient again by hand (and divides by the world size), a second all-reduce DDP already did."""
import contextlib

import torch.distributed as dist

EXPECT_FAIL = {'all_reduces_once_per_call': 'on rank 0, the gradients were all-reduced'}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / n).backward()
        total += loss.item()
    world = dist.get_world_size()
    for p in ddp_model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= world
    optimizer.step()
    return total / n
