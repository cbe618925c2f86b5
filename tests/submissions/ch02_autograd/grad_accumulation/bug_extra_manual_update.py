"""Bug: after optimizer.step() also applies a manual SGD update p -= lr * p.grad "to be sure", so every
step moves the parameters twice."""
EXPECT_FAIL = {"plain_sgd_matches": "between optimizer steps 1 and 2 the parameters changed", "momentum_sgd_matches": "a manual update"}

import torch


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("bad accum_steps")
    lr = optimizer.param_groups[0]["lr"]
    losses = []
    for start in range(0, len(micro_batches), accum_steps):
        optimizer.zero_grad()
        total = 0.0
        for x, y in micro_batches[start:start + accum_steps]:
            loss = loss_fn(model(x), y)
            (loss / accum_steps).backward()
            total += loss.item()
        optimizer.step()
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p -= lr * p.grad
        losses.append(total / accum_steps)
    return losses
