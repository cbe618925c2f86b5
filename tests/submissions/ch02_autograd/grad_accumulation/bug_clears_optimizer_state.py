"""Bug: clears the optimizer's state at the start (optimizer.state.clear()), so momentum and Adam's
moments built before the call are lost; only an optimizer that already stepped before the call shows it."""
EXPECT_FAIL = {'leftover_grads_ignored': 'the parameters after it differ'}

def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1:
        raise ValueError("accum_steps must be at least 1")
    if len(micro_batches) % accum_steps != 0:
        raise ValueError("the micro-batches do not split into windows of accum_steps")
    optimizer.state.clear()  # a fresh start
    losses = []
    for start in range(0, len(micro_batches), accum_steps):
        optimizer.zero_grad()
        total = 0.0
        for inputs, targets in micro_batches[start:start + accum_steps]:
            loss = loss_fn(model(inputs), targets)
            (loss / accum_steps).backward()
            total += loss.item()
        optimizer.step()
        losses.append(total / accum_steps)
    return losses
