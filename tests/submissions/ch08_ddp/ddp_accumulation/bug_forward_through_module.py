"""Bug: runs the forward through ddp_model.module, which bypasses DDP, so the gradients are never all-reduced."""
import contextlib

EXPECT_FAIL = {
    'matches_single_process_training': 'the gradients were not synchronised between the',
    'all_reduces_once_per_call': 'on rank 0, no forward ran through',
    'clears_leftover_gradients': 'the gradients were not synchronised between the',
    'returns_the_mean_loss': 'on rank 0, the returned loss is',
    'empty_list_raises_value_error': 'the gradients were not synchronised between the',
}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    model = ddp_model.module
    optimizer.zero_grad()
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            loss = loss_fn(model(inputs), targets)
            (loss / n).backward()
        total += loss.item()
    optimizer.step()
    return total / n
