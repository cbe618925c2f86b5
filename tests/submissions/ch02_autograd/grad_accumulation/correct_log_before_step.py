"""Correct, written differently: logs each window's micro-batch losses with a separate no_grad forward pass
before the window's backward passes and step."""
EXPECT_PASS = True

import torch
def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("bad")
    out = []
    n = len(micro_batches) // accum_steps
    for w in range(n):
        batch = micro_batches[w * accum_steps:(w + 1) * accum_steps]
        with torch.no_grad():
            logged = [loss_fn(model(x), y).item() for x, y in batch]   # before the step
        optimizer.zero_grad()
        for x, y in batch:
            (loss_fn(model(x), y) / accum_steps).backward()
        optimizer.step()
        out.append(sum(logged) / accum_steps)
    return out
