"""Bug: returns 0.0 for an empty list instead of raising ValueError."""
import contextlib

EXPECT_FAIL = {'empty_list_raises_value_error': 'a missing check at the top of'}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    n = len(micro_batches)
    if n == 0:
        return 0.0
    optimizer.zero_grad()
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / n).backward()
        total += loss.item()
    optimizer.step()
    return total / n
