"""Bug (hostile): zeroes the gradients only on the first call it sees, so from the second call on the previous step's gradients leak in."""
import contextlib

EXPECT_FAIL = {
    'matches_single_process_training': 'gradients from before the call leaked in',
    'all_reduces_once_per_call': 'gradients from before the call leaked in',
    'clears_leftover_gradients': 'gradients from before the call leaked in',
    'returns_the_mean_loss': 'gradients from before the call leaked in',
}

_zeroed = set()


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    if id(optimizer) not in _zeroed:
        optimizer.zero_grad()
        _zeroed.add(id(optimizer))
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / n).backward()
        total += loss.item()
    optimizer.step()
    return total / n
