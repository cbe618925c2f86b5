"""Bug: runs the first micro-batch outside no_sync and the rest inside, so the all-reduce happens before the other micro-batches are accumulated."""
import contextlib

EXPECT_FAIL = {
    'matches_single_process_training': 'after call 1, rank 0',
    'all_reduces_once_per_call': 'DDP decides during forward whether the coming',
    'clears_leftover_gradients': 'after call 1, rank 0',
    'returns_the_mean_loss': 'on rank 0, the returned loss is',
    'empty_list_raises_value_error': 'after call 1, rank 0',
}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i > 0 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / n).backward()
        total += loss.item()
    optimizer.step()
    return total / n
