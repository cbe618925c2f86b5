"""Bug: recognises the last micro-batch by identity (mb is micro_batches[-1]): when the list repeats one (inputs,
targets) object, every backward runs outside no_sync and each bucket is all-reduced several times per call."""
import contextlib

EXPECT_FAIL = {"all_reduces_once_per_call": "outside ddp_model.no_sync()"}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("no micro-batches")
    optimizer.zero_grad()
    losses = []
    for mb in micro_batches:
        inputs, targets = mb
        last = mb is micro_batches[-1]
        with contextlib.nullcontext() if last else ddp_model.no_sync():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / len(micro_batches)).backward()
        losses.append(loss.item())
    optimizer.step()
    return sum(losses) / len(losses)
