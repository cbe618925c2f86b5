"""Bug: the step is right but it returns float('nan') instead of the mean loss. (from an independent red team)."""
EXPECT_FAIL = {'returns_the_mean_loss': 'on rank 0, the returned loss is'}

import contextlib


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (inputs, targets) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / n).backward()
    optimizer.step()
    return float("nan")
