"""Bug: divides each loss by the number of micro-batches instead of by accum_steps."""
EXPECT_FAIL = {'plain_sgd_matches': 'len(micro_batches) instead of accum_steps'}


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps != 0:
        raise ValueError("bad accum_steps")
    losses = []
    for start in range(0, len(micro_batches), accum_steps):
        optimizer.zero_grad()
        total = 0.0
        for x, y in micro_batches[start:start + accum_steps]:
            loss = loss_fn(model(x), y)
            (loss / len(micro_batches)).backward()
            total += loss.item()
        optimizer.step()
        losses.append(total / accum_steps)
    return losses
