"""Bug: accumulates and all-reduces the gradients but never calls optimizer.step()."""
import contextlib

EXPECT_FAIL = {
    'matches_single_process_training': 'optimizer.step',
    'all_reduces_once_per_call': 'optimizer.step',
    'clears_leftover_gradients': 'optimizer.step',
    'returns_the_mean_loss': 'on rank 0, the returned loss is',
    'empty_list_raises_value_error': 'optimizer.step',
}


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
    return total / n
