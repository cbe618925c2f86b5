"""Correct, written differently: each window's accumulation runs inside a closure passed to
optimizer.step(closure), which calls it (with gradients enabled) before updating."""
EXPECT_PASS = True


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1:
        raise ValueError("accum_steps < 1")
    if len(micro_batches) % accum_steps:
        raise ValueError("micro-batches do not fill whole windows")
    windows = [micro_batches[i:i + accum_steps] for i in range(0, len(micro_batches), accum_steps)]
    history = []
    for window in windows:
        def closure(window=window):
            optimizer.zero_grad()
            total = 0.0
            for x, y in window:
                loss = loss_fn(model(x), y)
                loss.div(accum_steps).backward()
                total += loss.item()
            return total / accum_steps
        history.append(float(optimizer.step(closure)))
    return history
