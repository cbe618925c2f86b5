"""Bug: checks for an empty list at the top but raises TypeError instead of ValueError. (from an independent red team)."""
EXPECT_FAIL = {'empty_list_raises_value_error': 'the check for an empty list is'}

import contextlib


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise TypeError("micro_batches must not be empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    total = 0.0
    for i, (x, y) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(x), y)
            (loss / n).backward()
        total += loss.item()
    optimizer.step()
    return total / n
