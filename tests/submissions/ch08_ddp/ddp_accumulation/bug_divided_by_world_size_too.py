"""Bug: divides each loss by the world size as well, though DDP already averages the gradients over the ranks."""
import contextlib

import torch.distributed as dist

EXPECT_FAIL = {
    'matches_single_process_training': 'the loss was also divided by the',
    'all_reduces_once_per_call': 'the loss was also divided by the',
    'clears_leftover_gradients': 'the loss was also divided by the',
    'returns_the_mean_loss': 'on rank 0, the returned loss is',
    'empty_list_raises_value_error': 'the loss was also divided by the',
}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    world = dist.get_world_size()
    optimizer.zero_grad()
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / (n * world)).backward()
        total += loss.item()
    optimizer.step()
    return total / n
