"""Bug: off by one in the no_sync condition (i < n - 2), so the last two micro-batches run outside no_sync and all-reduce twice."""
import contextlib

EXPECT_FAIL = {'all_reduces_once_per_call': 'DDP decides during forward whether the coming'}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 2 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / n).backward()
        total += loss.item()
    optimizer.step()
    return total / n
