"""Bug: runs every forward outside no_sync, sums the divided losses, and calls backward once on the sum."""
EXPECT_FAIL = {'all_reduces_once_per_call': 'DDP decides during forward whether the coming'}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    losses = [loss_fn(ddp_model(x), y) for x, y in micro_batches]
    total = sum(loss / n for loss in losses)
    total.backward()
    optimizer.step()
    return total.item()
