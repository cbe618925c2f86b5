"""Bug: no check for an empty list; it steps with no gradients and then divides by zero (ZeroDivisionError, not ValueError)."""
import contextlib

EXPECT_FAIL = {'empty_list_raises_value_error': 'nothing checks for an empty list before'}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
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
