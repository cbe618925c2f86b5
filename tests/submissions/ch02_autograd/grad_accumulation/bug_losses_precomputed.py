"""Bug: computes every micro-batch's loss for the report before training starts, so later windows report
losses of the initial parameters."""
EXPECT_FAIL = {"losses_are_window_means": "computed with the initial parameters"}

import torch


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("bad accum_steps")
    with torch.no_grad():
        report = [loss_fn(model(x), y).item() for x, y in micro_batches]
    losses = []
    for start in range(0, len(micro_batches), accum_steps):
        optimizer.zero_grad()
        for x, y in micro_batches[start:start + accum_steps]:
            (loss_fn(model(x), y) / accum_steps).backward()
        optimizer.step()
        losses.append(sum(report[start:start + accum_steps]) / accum_steps)
    return losses
