"""Correct, written differently: ddp_model.module.zero_grad(), a plain if/else around two copies of the step, and np.mean of the losses (a numpy.float64, which is a float)."""
import numpy as np

EXPECT_PASS = True


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if micro_batches == []:
        raise ValueError("micro_batches is empty")
    steps = len(micro_batches)
    ddp_model.module.zero_grad()
    losses = []
    for i, batch in enumerate(micro_batches):
        x, y = batch
        if i == steps - 1:
            loss = loss_fn(ddp_model(x), y)
            (loss / steps).backward()
        else:
            with ddp_model.no_sync():
                loss = loss_fn(ddp_model(x), y)
                (loss / steps).backward()
        losses.append(loss.item())
    optimizer.step()
    return np.mean(losses)
