"""Correct: like correct_no_grad_loss_forward, but the extra measuring forward runs under torch.inference_mode(), after the backwards and before the step. (from an independent red team)."""
EXPECT_PASS = True

import contextlib

import torch


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    for p in ddp_model.module.parameters():
        p.grad = None
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            (loss_fn(ddp_model(inputs), targets) / n).backward()
    with torch.inference_mode():
        measured = sum(loss_fn(ddp_model(x), y).item() for x, y in micro_batches) / n
    optimizer.step()
    return measured
