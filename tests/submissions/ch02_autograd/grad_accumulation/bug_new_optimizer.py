"""Bug: builds its own plain SGD optimizer (with the given learning rate) instead of using the one it was
given, so momentum, Adam's state and param groups are lost."""
EXPECT_FAIL = {"momentum_sgd_matches": "optimizer.step() was never called", "adam_matches": "optimizer you were given"}

import torch


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("bad accum_steps")
    sgd = torch.optim.SGD(model.parameters(), lr=optimizer.param_groups[0]["lr"])
    losses = []
    for start in range(0, len(micro_batches), accum_steps):
        sgd.zero_grad()
        total = 0.0
        for x, y in micro_batches[start:start + accum_steps]:
            loss = loss_fn(model(x), y)
            (loss / accum_steps).backward()
            total += loss.item()
        sgd.step()
        losses.append(total / accum_steps)
    return losses
