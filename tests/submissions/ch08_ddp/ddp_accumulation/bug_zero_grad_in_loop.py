"""Bug: zeroes the gradients inside the loop, before each micro-batch, so only the last micro-batch's gradient is stepped with."""
import contextlib

EXPECT_FAIL = {
    'matches_single_process_training': 'only the last micro-batch',
    'all_reduces_once_per_call': 'only the last micro-batch',
    'clears_leftover_gradients': 'only the last micro-batch',
    'returns_the_mean_loss': 'on rank 0, the returned loss is',
    'empty_list_raises_value_error': 'only the last micro-batch',
}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        optimizer.zero_grad()
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / n).backward()
        total += loss.item()
    optimizer.step()
    return total / n
