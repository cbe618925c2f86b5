"""Nothing trained: computes the window losses and their gradients, but never calls the optimizer."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("bad accum_steps")
    losses = []
    for start in range(0, len(micro_batches), accum_steps):
        optimizer.zero_grad()
        total = 0.0
        for x, y in micro_batches[start:start + accum_steps]:
            loss = loss_fn(model(x), y)
            (loss / accum_steps).backward()
            total += loss.item()
        losses.append(total / accum_steps)
    return losses
