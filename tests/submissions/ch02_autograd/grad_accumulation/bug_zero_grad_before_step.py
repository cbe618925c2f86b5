"""Bug: "tidies up" with zero_grad() right before optimizer.step(), so every step sees no gradient."""
EXPECT_FAIL = {"plain_sgd_matches": "all zero (or None) when optimizer.step() ran", "adam_matches": "all zero"}


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("bad accum_steps")
    losses = []
    for start in range(0, len(micro_batches), accum_steps):
        total = 0.0
        for x, y in micro_batches[start:start + accum_steps]:
            loss = loss_fn(model(x), y)
            (loss / accum_steps).backward()
            total += loss.item()
        optimizer.zero_grad()
        optimizer.step()
        losses.append(total / accum_steps)
    return losses
