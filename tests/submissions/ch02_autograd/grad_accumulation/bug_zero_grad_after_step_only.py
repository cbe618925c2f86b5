"""Bug: zero_grad() only after each step, so .grad left from before the call leaks into the first step."""
EXPECT_FAIL = {'leftover_grads_ignored': 'zero_grad missing at the start'}


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps != 0:
        raise ValueError("bad accum_steps")
    losses = []
    for start in range(0, len(micro_batches), accum_steps):
        total = 0.0
        for x, y in micro_batches[start:start + accum_steps]:
            loss = loss_fn(model(x), y)
            (loss / accum_steps).backward()
            total += loss.item()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(total / accum_steps)
    return losses
