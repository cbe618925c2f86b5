"""Bug: does not divide the losses; instead divides the learning rate by the number of micro-batches for the step (and puts it back). The gradient it steps with is n times the mean-loss gradient (spec violation), and SGD's momentum buffer ends up n times too large, so later ordinary steps diverge; this call's parameters are the same. (from an independent red team)."""
EXPECT_FAIL = {
    'matches_single_process_training': 'the gradient is 3.0 times the right',
    'clears_leftover_gradients': 'the gradient is 3.0 times the right',
}

import contextlib


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    total = 0.0
    for i, (x, y) in enumerate(micro_batches):
        with ddp_model.no_sync() if i < n - 1 else contextlib.nullcontext():
            loss = loss_fn(ddp_model(x), y)
            loss.backward()
        total += loss.item()
    saved = [group["lr"] for group in optimizer.param_groups]
    for group in optimizer.param_groups:
        group["lr"] = group["lr"] / n
    optimizer.step()
    for group, lr in zip(optimizer.param_groups, saved):
        group["lr"] = lr
    return total / n
