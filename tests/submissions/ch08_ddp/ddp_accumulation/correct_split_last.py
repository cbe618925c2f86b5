"""Correct, written differently: one no_sync block around a loop over micro_batches[:-1], then the last micro-batch outside it; grads set to None by hand, losses kept detached and averaged with torch.stack in float32."""
import torch

EXPECT_PASS = True


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not len(micro_batches):
        raise ValueError("empty list of micro-batches")
    for p in ddp_model.parameters():
        p.grad = None
    k = len(micro_batches)
    *head, last = micro_batches
    losses = []
    with ddp_model.no_sync():
        for x, y in head:
            loss = loss_fn(ddp_model(x), y)
            loss.mul(1.0 / k).backward()
            losses.append(loss.detach())
    x, y = last
    loss = loss_fn(ddp_model(x), y)
    loss.mul(1.0 / k).backward()
    losses.append(loss.detach())
    optimizer.step()
    return torch.stack(losses).mean().item()
