"""Correct, written differently: the way a careful student writes it, an if/else that repeats the forward and backward for the last micro-batch."""
EXPECT_PASS = True


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if len(micro_batches) == 0:
        raise ValueError("need at least one micro-batch")
    n = len(micro_batches)
    optimizer.zero_grad()
    losses = []
    for i, (inputs, targets) in enumerate(micro_batches):
        if i < n - 1:
            with ddp_model.no_sync():
                loss = loss_fn(ddp_model(inputs), targets)
                (loss / n).backward()
        else:
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / n).backward()
        losses.append(loss.item())
    optimizer.step()
    return sum(losses) / n
