"""Bug: validates with assert, which raises AssertionError instead of ValueError."""
EXPECT_FAIL = {'validates_arguments': 'raise ValueError(...) instead'}


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    assert accum_steps >= 1 and len(micro_batches) % accum_steps == 0, "bad accum_steps"
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
