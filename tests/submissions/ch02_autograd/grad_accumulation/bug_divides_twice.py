"""Bug: divides each micro-batch's loss by accum_steps AND the accumulated .grad by accum_steps again."""
EXPECT_FAIL = {"plain_sgd_matches": "divided by accum_steps twice", "momentum_sgd_matches": "divided by accum_steps twice"}

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
            (loss / accum_steps).backward()
            total += loss.item()
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p.grad /= accum_steps     # "average" the accumulated gradient
        optimizer.step()
        losses.append(total / accum_steps)
    return losses
