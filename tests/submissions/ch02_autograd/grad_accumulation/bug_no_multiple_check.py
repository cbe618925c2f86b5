"""Bug: validates accum_steps >= 1 only; a number of micro-batches that is not a multiple of it trains a
last, partial window."""
EXPECT_FAIL = {"validates_arguments": "5 micro-batches do not split into windows of 2"}


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1:
        raise ValueError("accum_steps must be positive")
    losses = []
    for start in range(0, len(micro_batches), accum_steps):
        window = micro_batches[start:start + accum_steps]
        optimizer.zero_grad()
        total = 0.0
        for x, y in window:
            loss = loss_fn(model(x), y)
            (loss / len(window)).backward()
            total += loss.item()
        optimizer.step()
        losses.append(total / len(window))
    return losses
