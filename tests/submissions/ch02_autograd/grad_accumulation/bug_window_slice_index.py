"""Bug: slices the window with the window's index instead of its first micro-batch's index
(micro_batches[w:w + accum_steps]), so windows overlap and most micro-batches are never used."""
EXPECT_FAIL = {"plain_sgd_matches": "the gradient at optimizer step 2 is not the gradient of window 2's mean loss"}


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("bad accum_steps")
    losses = []
    for w in range(len(micro_batches) // accum_steps):
        optimizer.zero_grad()
        total = 0.0
        for x, y in micro_batches[w:w + accum_steps]:
            loss = loss_fn(model(x), y)
            (loss / accum_steps).backward()
            total += loss.item()
        optimizer.step()
        losses.append(total / accum_steps)
    return losses
