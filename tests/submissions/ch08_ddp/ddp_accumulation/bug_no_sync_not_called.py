"""Bug: writes `with ddp_model.no_sync:` without calling it, which raises TypeError as soon as there are two micro-batches."""
EXPECT_FAIL = {
    'matches_single_process_training': 'failed',
    'all_reduces_once_per_call': 'failed',
    'clears_leftover_gradients': 'failed',
    'returns_the_mean_loss': 'failed',
    'empty_list_raises_value_error': 'failed',
}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    total = 0.0
    for inputs, targets in micro_batches[:-1]:
        with ddp_model.no_sync:
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / n).backward()
        total += loss.item()
    inputs, targets = micro_batches[-1]
    loss = loss_fn(ddp_model(inputs), targets)
    (loss / n).backward()
    total += loss.item()
    optimizer.step()
    return total / n
