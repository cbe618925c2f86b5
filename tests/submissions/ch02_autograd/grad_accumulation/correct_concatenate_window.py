"""Correct, written differently: concatenates each window's micro-batches and runs one forward and
backward pass on the whole window (the spec allows it: equal batch sizes and a mean loss make the
window's mean loss the mean of its micro-batch losses)."""
EXPECT_PASS = True

import torch


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("accum_steps must be >= 1 and divide len(micro_batches)")
    out = []
    for start in range(0, len(micro_batches), accum_steps):
        xs, ys = zip(*micro_batches[start:start + accum_steps])
        optimizer.zero_grad()
        loss = loss_fn(model(torch.cat(xs)), torch.cat(ys))
        loss.backward()
        optimizer.step()
        out.append(loss.item())
    return out
