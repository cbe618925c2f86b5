"""Bug: returns the mean loss measured again after optimizer.step(), with the new weights, instead of the losses of the step."""
import contextlib

import torch

EXPECT_FAIL = {'returns_the_mean_loss': 'the loss measured again after optimizer.step'}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / n).backward()
    optimizer.step()
    with torch.no_grad():
        return sum(loss_fn(ddp_model.module(x), y).item() for x, y in micro_batches) / n
