"""Correct, written differently: contextlib.nullcontext for the last micro-batch, the loss accumulated as a detached tensor, and float() on the result."""
import contextlib

EXPECT_PASS = True


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if len(micro_batches) < 1:
        raise ValueError("no micro-batches")
    optimizer.zero_grad(set_to_none=True)
    n = len(micro_batches)
    total = 0
    for i, (inputs, targets) in enumerate(micro_batches):
        ctx = ddp_model.no_sync() if i + 1 < n else contextlib.nullcontext()
        with ctx:
            out = ddp_model(inputs)
            loss = loss_fn(out, targets)
            (loss / n).backward()
        total = total + loss.detach()
    optimizer.step()
    return float(total / n)
