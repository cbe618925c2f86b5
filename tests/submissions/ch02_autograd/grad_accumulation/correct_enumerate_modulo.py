"""Correct, written differently: one loop over enumerate(micro_batches), step when (i + 1) % accum_steps == 0,
model.zero_grad() before the loop and after each step."""
EXPECT_PASS = True


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps <= 0 or len(micro_batches) % accum_steps:
        raise ValueError("accum_steps must be >= 1 and divide the number of micro-batches")
    model.zero_grad()
    history, running = [], 0.0
    for i, (x, y) in enumerate(micro_batches):
        loss = loss_fn(model(x), y) / accum_steps
        loss.backward()
        running += loss.item()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            model.zero_grad()
            history.append(running)
            running = 0.0
    return history
