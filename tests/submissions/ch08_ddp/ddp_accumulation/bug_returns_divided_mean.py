"""Bug: returns the mean of the divided losses (loss / n), n times too small."""
import contextlib

EXPECT_FAIL = {'returns_the_mean_loss': 'the mean divided again by the number'}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    losses = []
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / n).backward()
        losses.append((loss / n).item())
    optimizer.step()
    return sum(losses) / n
