"""Bug: all-reduces the loss and returns its mean over all ranks instead of this rank's own mean micro-batch loss."""
import contextlib

import torch
import torch.distributed as dist

EXPECT_FAIL = {'returns_the_mean_loss': 'the mean over the ranks'}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    total = torch.zeros(())
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / n).backward()
        total += loss.detach()
    optimizer.step()
    dist.all_reduce(total)
    return (total / (n * dist.get_world_size())).item()
