"""Bug: zero_grad() once before the loop, never between windows, so gradients pile up across windows."""
EXPECT_FAIL = {'plain_sgd_matches': 'not cleared between windows', 'momentum_sgd_matches': 'not cleared between windows'}


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps != 0:
        raise ValueError("bad accum_steps")
    losses = []
    optimizer.zero_grad()
    for start in range(0, len(micro_batches), accum_steps):
        total = 0.0
        for x, y in micro_batches[start:start + accum_steps]:
            loss = loss_fn(model(x), y)
            (loss / accum_steps).backward()
            total += loss.item()
        optimizer.step()
        losses.append(total / accum_steps)
    return losses
