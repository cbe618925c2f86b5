"""Correct, written differently: a sync flag computed from the index, no_sync entered by hand with __enter__/__exit__, zero_grad called on the optimizer with set_to_none=False, and statistics.fmean for the return."""
import statistics

EXPECT_PASS = True


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    n = len(micro_batches)
    if n == 0:
        raise ValueError("micro_batches must not be empty")
    optimizer.zero_grad(set_to_none=False)
    values = []
    for i in range(n):
        inputs, targets = micro_batches[i]
        sync = i == n - 1
        guard = None if sync else ddp_model.no_sync()
        if guard is not None:
            guard.__enter__()
        try:
            loss = loss_fn(ddp_model(inputs), targets)
            loss.div(n).backward()
        finally:
            if guard is not None:
                guard.__exit__(None, None, None)
        values.append(loss.item())
    optimizer.step()
    return statistics.fmean(values)
