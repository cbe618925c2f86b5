"""Bug: zero_grad() inside the micro-batch loop, so only the last micro-batch's gradient is stepped."""
EXPECT_FAIL = {'plain_sgd_matches': 'only the last micro-batch', 'edge_accum_steps': 'only the last micro-batch'}


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps != 0:
        raise ValueError("bad accum_steps")
    losses = []
    for start in range(0, len(micro_batches), accum_steps):
        total = 0.0
        for x, y in micro_batches[start:start + accum_steps]:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            (loss / accum_steps).backward()
            total += loss.item()
        optimizer.step()
        losses.append(total / accum_steps)
    return losses
