"""Bug: clips the window's gradient norm to 1 before optimizer.step(); a no-op while gradient norms stay
below 1, wrong for every larger gradient."""
EXPECT_FAIL = {'plain_sgd_matches': 'the parameters are wrong'}

import torch


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1:
        raise ValueError("accum_steps must be at least 1")
    if len(micro_batches) % accum_steps != 0:
        raise ValueError("the micro-batches do not split into windows of accum_steps")
    losses = []
    for start in range(0, len(micro_batches), accum_steps):
        optimizer.zero_grad()
        total = 0.0
        for inputs, targets in micro_batches[start:start + accum_steps]:
            loss = loss_fn(model(inputs), targets)
            (loss / accum_steps).backward()
            total += loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(total / accum_steps)
    return losses
