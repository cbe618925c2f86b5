"""Bug: never zeroes the gradients, so what was in .grad before the call is added into the step."""
import contextlib

EXPECT_FAIL = {
    'matches_single_process_training': 'gradients from before the call leaked in',
    'all_reduces_once_per_call': 'gradients from before the call leaked in',
    'clears_leftover_gradients': 'gradients from before the call leaked in',
    'returns_the_mean_loss': 'gradients from before the call leaked in',
}


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
    return total / n
