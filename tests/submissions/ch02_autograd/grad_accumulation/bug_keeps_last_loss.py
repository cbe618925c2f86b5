"""Bug: appends the loss variable after the window's loop, i.e. the last micro-batch's loss only."""
EXPECT_FAIL = {"losses_are_window_means": "only the last micro-batch's loss"}


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("bad accum_steps")
    losses = []
    for start in range(0, len(micro_batches), accum_steps):
        optimizer.zero_grad()
        for x, y in micro_batches[start:start + accum_steps]:
            loss = loss_fn(model(x), y)
            (loss / accum_steps).backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
