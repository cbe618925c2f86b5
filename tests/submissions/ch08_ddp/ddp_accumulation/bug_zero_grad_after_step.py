"""Bug: zeroes the gradients after optimizer.step() instead of first, so gradients already in .grad before the call leak into the step."""
import contextlib

EXPECT_FAIL = {'clears_leftover_gradients': 'gradients from before the call leaked in'}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / n).backward()
        total += loss.item()
    optimizer.step()
    optimizer.zero_grad()
    return total / n
