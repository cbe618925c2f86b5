"""Correct, written differently: sweeps deep copies of (model, optimizer), so the originals are never touched.

Copying the pair in one deepcopy keeps the copied optimizer pointing at the copied model's parameters.
The loader is restarted by an outer ``while`` around ``for batch in loader``; the smoothing is written
as s += smooth * (loss - s).
"""
import copy

import numpy as np

EXPECT_PASS = True


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    if not start_lr > 0:
        raise ValueError("start_lr must be positive")
    if not end_lr > start_lr:
        raise ValueError("end_lr must exceed start_lr")
    if num_iter < 2:
        raise ValueError("num_iter must be at least 2")
    net, opt = copy.deepcopy((model, optimizer))
    net.train()
    ratio = end_lr / start_lr
    lrs, losses = [], []
    best = float("inf")
    while len(lrs) < num_iter:
        for inputs, targets in loader:
            i = len(lrs)
            lr = start_lr * ratio ** (i / (num_iter - 1))
            for group in opt.param_groups:
                group["lr"] = lr
            opt.zero_grad()
            loss = loss_fn(net(inputs), targets)
            loss.backward()
            opt.step()
            value = loss.item()
            s = value if i == 0 else losses[-1] + smooth * (value - losses[-1])
            lrs.append(lr)
            losses.append(s)
            best = min(best, s)
            if s > diverge_threshold * best:
                return lrs, losses
            if len(lrs) == num_iter:
                break
    return lrs, losses


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    lrs = lrs[skip_start:len(lrs) - skip_end]
    losses = losses[skip_start:len(losses) - skip_end]
    if len(losses) < 2:
        raise ValueError(f"only {len(losses)} points left after trimming")
    return lrs[np.gradient(losses).argmin()]
