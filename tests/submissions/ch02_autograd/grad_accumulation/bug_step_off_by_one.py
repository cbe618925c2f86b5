"""Bug: steps when i % accum_steps == 0, i.e. after the first micro-batch of each window."""
EXPECT_FAIL = {'plain_sgd_matches': 'FIRST micro-batch', 'adam_matches': 'FIRST micro-batch'}


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps != 0:
        raise ValueError("bad accum_steps")
    losses, total = [], 0.0
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        loss = loss_fn(model(x), y)
        (loss / accum_steps).backward()
        total += loss.item()
        if i % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
            losses.append(total / accum_steps)
            total = 0.0
    return losses
