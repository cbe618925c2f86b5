"""Correct, written differently: an ExitStack that enters no_sync for all but the last, model.zero_grad(set_to_none=False), and the sum of the divided losses as the mean."""
from contextlib import ExitStack

EXPECT_PASS = True


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    micro_batches = list(micro_batches)
    if not micro_batches:
        raise ValueError("micro_batches is empty")
    count = len(micro_batches)
    ddp_model.zero_grad(set_to_none=False)
    mean_loss = 0.0
    for index, (x, y) in enumerate(micro_batches):
        with ExitStack() as stack:
            if index != count - 1:
                stack.enter_context(ddp_model.no_sync())
            scaled = loss_fn(ddp_model(x), y) / count
            scaled.backward()
        mean_loss += scaled.item()
    optimizer.step()
    return mean_loss
