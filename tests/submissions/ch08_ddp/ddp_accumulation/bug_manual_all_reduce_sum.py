"""Bug: all-reduces the gradients again by hand after DDP did, with a SUM and no division, so the step is world-size times too large."""
import contextlib

import torch.distributed as dist

EXPECT_FAIL = {
    'matches_single_process_training': 'the gradient is summed over the ranks',
    'all_reduces_once_per_call': 'on rank 0, the gradients were all-reduced',
    'clears_leftover_gradients': 'the gradient is summed over the ranks',
    'returns_the_mean_loss': 'on rank 0, the returned loss is',
    'empty_list_raises_value_error': 'the gradient is summed over the ranks',
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
    for p in ddp_model.parameters():
        dist.all_reduce(p.grad)
    optimizer.step()
    return total / n
