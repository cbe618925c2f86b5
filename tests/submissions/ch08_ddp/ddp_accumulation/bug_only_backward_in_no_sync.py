"""Bug: runs the forward outside no_sync and only the backward inside it, so every backward still all-reduces."""
import contextlib

EXPECT_FAIL = {'all_reduces_once_per_call': 'DDP decides during forward whether the coming'}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        loss = loss_fn(ddp_model(inputs), targets)
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            (loss / n).backward()
        total += loss.item()
    optimizer.step()
    return total / n
