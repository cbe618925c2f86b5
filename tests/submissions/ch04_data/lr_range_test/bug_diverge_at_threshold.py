"""Bug: the divergence test uses >= (s_i >= diverge_threshold * min(s_0..s_i)). With diverge_threshold=1 it stops
at iteration 0 (s_0 >= s_0); the specification stops only when s_i is above the threshold times the minimum."""
import copy
import math

import numpy as np

EXPECT_FAIL = {"stops_on_divergence": "uses >= where the spec has >"}


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    if start_lr <= 0 or end_lr <= start_lr or num_iter < 2:
        raise ValueError("invalid arguments")
    model_state = copy.deepcopy(model.state_dict())
    optimizer_state = copy.deepcopy(optimizer.state_dict())
    modes = [(m, m.training) for m in model.modules()]
    lrs, losses = [], []
    model.train()
    batches = iter(loader)
    smoothed = best = math.inf
    for i in range(num_iter):
        lr = start_lr * (end_lr / start_lr) ** (i / (num_iter - 1))
        for group in optimizer.param_groups:
            group["lr"] = lr
        try:
            inputs, targets = next(batches)
        except StopIteration:
            batches = iter(loader)
            inputs, targets = next(batches)
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        value = loss.item()
        smoothed = value if i == 0 else smooth * value + (1 - smooth) * smoothed
        lrs.append(lr)
        losses.append(smoothed)
        best = min(best, smoothed)
        if smoothed >= diverge_threshold * best:
            break
    model.load_state_dict(model_state)
    optimizer.load_state_dict(optimizer_state)
    for m, training in modes:
        m.training = training
    return lrs, losses


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    stop = max(len(losses) - skip_end, 0)
    kept = list(losses)[skip_start:stop]
    if len(kept) < 2:
        raise ValueError("fewer than 2 points")
    return float(list(lrs)[skip_start:stop][int(np.argmin(np.gradient(np.asarray(kept, dtype=np.float64))))])
