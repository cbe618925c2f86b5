"""Correct: measures the returned loss with an extra forward under torch.no_grad() (before the step), through ddp_model; the training forwards/backwards are as specified. (from an independent red team)."""
EXPECT_PASS = True

import contextlib

import torch


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    with torch.no_grad():
        measured = sum(loss_fn(ddp_model(x), y).item() for x, y in micro_batches) / n
    optimizer.zero_grad(set_to_none=False)
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            (loss_fn(ddp_model(inputs), targets) / n).backward()
    optimizer.step()
    return measured
