"""Bug: the running loss total is never reset, so each window reports the losses of all windows so far."""
EXPECT_FAIL = {"losses_are_window_means": "not reset between windows"}

def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("bad")
    out, running = [], 0.0
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        loss = loss_fn(model(x), y)
        (loss / accum_steps).backward()
        running += loss.item()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
            out.append(running / accum_steps)
    return out
