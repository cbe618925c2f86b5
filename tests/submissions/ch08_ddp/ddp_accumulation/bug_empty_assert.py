"""Bug: checks for an empty list with assert, which raises AssertionError instead of ValueError."""
import contextlib

EXPECT_FAIL = {'empty_list_raises_value_error': 'assert raises AssertionError; raise ValueError'}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    assert len(micro_batches) > 0, "micro_batches must not be empty"
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
