"""Bug: runs every micro-batch, the last one included, inside no_sync, so the gradients are never all-reduced."""
EXPECT_FAIL = {
    'matches_single_process_training': 'the gradients were not synchronised between the',
    'all_reduces_once_per_call': 'on rank 0, every forward of the',
    'clears_leftover_gradients': 'the gradients were not synchronised between the',
    'returns_the_mean_loss': 'on rank 0, the returned loss is',
    'empty_list_raises_value_error': 'the gradients were not synchronised between the',
}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    total = 0.0
    with ddp_model.no_sync():
        for inputs, targets in micro_batches:
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / n).backward()
            total += loss.item()
    optimizer.step()
    return total / n
