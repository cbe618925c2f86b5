"""Bug: rejects accum_steps <= 1, but accum_steps=1 is valid (plain training)."""
EXPECT_FAIL = {"validates_arguments": "these arguments are valid", "edge_accum_steps": "raised ValueError"}


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps <= 1 or len(micro_batches) % accum_steps:
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
