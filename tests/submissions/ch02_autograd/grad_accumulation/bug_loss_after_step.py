"""Bug: reports each window's loss by evaluating it again after optimizer.step(), with the updated parameters."""
EXPECT_FAIL = {"losses_are_window_means": "computed after optimizer.step()"}

import torch
def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("bad")
    out = []
    for s in range(0, len(micro_batches), accum_steps):
        window = micro_batches[s:s + accum_steps]
        optimizer.zero_grad()
        for x, y in window:
            (loss_fn(model(x), y) / accum_steps).backward()
        optimizer.step()
        with torch.no_grad():   # report the window's loss
            out.append(sum(loss_fn(model(x), y).item() for x, y in window) / accum_steps)
    return out
