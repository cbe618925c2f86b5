"""Bug: runs the forwards of all but the last inside no_sync but never their backward: it sums the divided losses and calls backward once, outside no_sync."""
EXPECT_FAIL = {'all_reduces_once_per_call': 'the losses were added up and one'}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    optimizer.zero_grad()
    total = 0
    with ddp_model.no_sync():
        for x, y in micro_batches[:-1]:
            total = total + loss_fn(ddp_model(x), y) / n
    x, y = micro_batches[-1]
    total = total + loss_fn(ddp_model(x), y) / n
    total.backward()
    optimizer.step()
    return total.item()
