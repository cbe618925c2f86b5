"""Bug: calls ddp_model.train() first "to be safe": a model handed over in eval mode (its Dropout off) is trained
with Dropout on, so the step's gradient is not that of the mean loss of the model as given."""
EXPECT_FAIL = {"matches_single_process_training": "not those of one-process training"}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if len(micro_batches) == 0:
        raise ValueError("micro_batches is empty")
    ddp_model.train()
    optimizer.zero_grad(set_to_none=True)
    n, total = len(micro_batches), 0.0
    for i, (x, y) in enumerate(micro_batches):
        if i < n - 1:
            with ddp_model.no_sync():
                loss = loss_fn(ddp_model(x), y)
                (loss / n).backward()
        else:
            loss = loss_fn(ddp_model(x), y)
            (loss / n).backward()
        total += float(loss.detach())
    optimizer.step()
    return total / n
