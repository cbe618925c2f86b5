"""Bug: rejects bad arguments with RuntimeError instead of the ValueError the specification names."""
EXPECT_FAIL = {"validates_arguments": "the specification asks for ValueError"}


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise RuntimeError(f"cannot accumulate {len(micro_batches)} micro-batches in windows of {accum_steps}")
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
