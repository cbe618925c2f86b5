"""Bug: raises ValueError for an empty list of micro-batches; 0 is a multiple of every accum_steps, so the
call is valid and returns [] without a step."""
EXPECT_FAIL = {'edge_accum_steps': 'these arguments are valid'}

def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1:
        raise ValueError("accum_steps must be at least 1")
    if not micro_batches or len(micro_batches) % accum_steps != 0:
        raise ValueError("the micro-batches do not split into windows of accum_steps")
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
