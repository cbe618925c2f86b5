"""Bug: backward on the unscaled losses, then divides every parameter's .grad by accum_steps, without
skipping parameters whose .grad is None (a frozen layer's)."""
EXPECT_FAIL = {"adam_matches": "always for a frozen parameter"}

import torch


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("bad accum_steps")
    losses = []
    for start in range(0, len(micro_batches), accum_steps):
        optimizer.zero_grad()
        total = 0.0
        for x, y in micro_batches[start:start + accum_steps]:
            loss = loss_fn(model(x), y)
            loss.backward()
            total += loss.item()
        with torch.no_grad():
            for p in model.parameters():
                p.grad /= accum_steps
        optimizer.step()
        losses.append(total / accum_steps)
    return losses
