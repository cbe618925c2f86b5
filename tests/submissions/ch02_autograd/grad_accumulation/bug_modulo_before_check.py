"""Bug: computes len(micro_batches) % accum_steps before checking accum_steps, so 0 raises ZeroDivisionError."""
EXPECT_FAIL = {'validates_arguments': 'check accum_steps < 1 first'}


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if len(micro_batches) % accum_steps != 0 or accum_steps < 1:
        raise ValueError("bad accum_steps")
    losses = []
    for start in range(0, len(micro_batches), accum_steps):
        optimizer.zero_grad()
        total = 0.0
        for x, y in micro_batches[start:start + accum_steps]:
            loss = loss_fn(model(x), y)
            (loss / accum_steps).backward()
            total += loss.item()
        optimizer.step()
        losses.append(total / accum_steps)
    return losses
