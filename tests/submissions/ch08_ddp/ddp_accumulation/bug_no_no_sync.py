"""Bug: never uses no_sync, so every micro-batch's backward all-reduces the gradients."""
EXPECT_FAIL = {'all_reduces_once_per_call': 'DDP decides during forward whether the coming'}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    total = 0.0
    for inputs, targets in micro_batches:
        loss = loss_fn(ddp_model(inputs), targets)
        (loss / n).backward()
        total += loss.item()
    optimizer.step()
    return total / n
