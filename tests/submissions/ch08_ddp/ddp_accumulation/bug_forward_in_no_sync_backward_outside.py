"""Bug: runs only the forward inside no_sync and every backward outside it (the spec asks for forward and backward inside)."""
import contextlib

EXPECT_FAIL = {'all_reduces_once_per_call': 'no_sync must hold the backward as well'}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(inputs), targets)
        (loss / n).backward()
        total += loss.item()
    optimizer.step()
    return total / n
