"""Bug: tests accum_steps % len(micro_batches) instead of len(micro_batches) % accum_steps."""
EXPECT_FAIL = {"validates_arguments": "it must raise ValueError because 2 micro-batches do not fill one window of 4"}


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or accum_steps % len(micro_batches) != 0:
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
