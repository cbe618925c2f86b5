"""Bug (a natural NaN): collects the losses in a tensor that is then reset before taking the mean, giving torch.tensor([]).mean() = nan. (from an independent red team)."""
EXPECT_FAIL = {'returns_the_mean_loss': 'on rank 0, the returned loss is'}

import contextlib

import torch


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    losses = []
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / n).backward()
        losses.append(loss.item())
    optimizer.step()
    losses = losses[n:]  # meant to keep "this step's" losses; keeps none
    return torch.tensor(losses).mean().item()
