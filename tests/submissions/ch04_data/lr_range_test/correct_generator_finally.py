"""Correct, written differently: an endless generator over the loader, lrs from np.logspace of the log10s
(recorded as numpy floats), the snapshot saved with torch.save into memory, a try/finally restore that
calls each module's train(flag) in parent-first order, and suggest_lr computing central differences in a loop.
"""
import io
import math

import numpy as np
import torch

EXPECT_PASS = True


def _forever(loader):
    while True:
        yielded = False
        for batch in loader:
            yielded = True
            yield batch
        if not yielded:
            raise ValueError("the loader is empty")


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    if not (start_lr > 0):
        raise ValueError(f"start_lr={start_lr} must be positive")
    if not (end_lr > start_lr):
        raise ValueError(f"end_lr={end_lr} must exceed start_lr={start_lr}")
    if num_iter < 2:
        raise ValueError(f"num_iter={num_iter} must be at least 2")
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
    modes = [(module, module.training) for module in model.modules()]
    schedule = np.logspace(math.log10(start_lr), math.log10(end_lr), num_iter)
    schedule[0], schedule[-1] = start_lr, end_lr
    lrs, losses = [], []
    try:
        model.train()
        batches = _forever(loader)
        for lr in schedule:
            for group in optimizer.param_groups:
                group["lr"] = float(lr)
            inputs, targets = next(batches)
            for group in optimizer.param_groups:
                for p in group["params"]:
                    p.grad = None
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
            value = loss.detach().cpu().item()
            smoothed = value if not losses else losses[-1] * (1 - smooth) + value * smooth
            lrs.append(lr)
            losses.append(smoothed)
            if smoothed > diverge_threshold * min(losses):
                break
    finally:
        buffer.seek(0)
        saved = torch.load(buffer, weights_only=True)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        for module, mode in modes:  # parents come first: a child's own flag is set after its parent's
            module.train(mode)
    return lrs, losses


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    ys = list(losses)[skip_start:len(losses) - skip_end if skip_end else None]
    xs = list(lrs)[skip_start:len(lrs) - skip_end if skip_end else None]
    if len(ys) < 2:
        raise ValueError("numpy.gradient needs at least 2 points")
    slopes = []
    for i in range(len(ys)):
        if i == 0:
            slopes.append(ys[1] - ys[0])
        elif i == len(ys) - 1:
            slopes.append(ys[-1] - ys[-2])
        else:
            slopes.append((ys[i + 1] - ys[i - 1]) / 2)
    best = 0
    for i, slope in enumerate(slopes):
        if slope < slopes[best]:
            best = i
    return xs[best]
