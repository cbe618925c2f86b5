"""Correct, written differently: clears gradients by setting p.grad = None and returns numpy.mean of the
window's losses (a numpy.float64, which is a float)."""
EXPECT_PASS = True

import numpy as np
def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps != 0:
        raise ValueError(f"cannot split {len(micro_batches)} micro-batches into windows of {accum_steps}")
    out = []
    for w in range(0, len(micro_batches), accum_steps):
        for p in model.parameters():
            p.grad = None
        window = []
        for x, y in micro_batches[w:w + accum_steps]:
            l = loss_fn(model(x), y)
            l.div(accum_steps).backward()
            window.append(l.item())
        optimizer.step()
        out.append(np.mean(window))     # numpy.float64 (a float subclass)
    return out
