"""Bug: takes .item() first and then tries to call backward() on the float."""
EXPECT_FAIL = {"plain_sgd_matches": "backward() was called on a Python float"}


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("bad accum_steps")
    losses = []
    for start in range(0, len(micro_batches), accum_steps):
        optimizer.zero_grad()
        total = 0.0
        for x, y in micro_batches[start:start + accum_steps]:
            loss = loss_fn(model(x), y).item() / accum_steps
            loss.backward()
            total += loss
        optimizer.step()
        losses.append(total)
    return losses
