"""Correct, written differently: np.geomspace for the sweep, a generator of passes for the restarts, a
snapshot made of clones, and a try/finally restore. suggest_lr computes the central differences by hand.
"""
import copy
import itertools

import numpy as np
import torch

EXPECT_PASS = True


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    if start_lr <= 0 or end_lr <= start_lr or num_iter < 2:
        raise ValueError("bad sweep arguments")
    params = {k: v.detach().clone() for k, v in model.state_dict().items()}
    opt_state = copy.deepcopy(optimizer.state_dict())
    modes = [(m, m.training) for m in model.modules()]
    lrs, losses = [], []
    try:
        model.train()
        batches = (batch for _ in itertools.count() for batch in loader)  # each pass a new iter(loader)
        smoothed = None
        for lr, (x, y) in zip(np.geomspace(start_lr, end_lr, num_iter), batches):
            for group in optimizer.param_groups:
                group["lr"] = float(lr)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            smoothed = loss.item() if smoothed is None else smooth * loss.item() + (1 - smooth) * smoothed
            lrs.append(float(lr))
            losses.append(smoothed)
            if smoothed > diverge_threshold * min(losses):
                break
    finally:
        with torch.no_grad():
            model.load_state_dict(params)
        optimizer.load_state_dict(opt_state)
        for m, training in modes:
            m.training = training
    return lrs, losses


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    stop = len(losses) - skip_end
    ys = list(losses[skip_start:stop])
    xs = list(lrs[skip_start:stop])
    if len(ys) < 2:
        raise ValueError("need at least two points")
    grad = [ys[1] - ys[0]] + [(ys[i + 1] - ys[i - 1]) / 2 for i in range(1, len(ys) - 1)] + [ys[-1] - ys[-2]]
    return xs[min(range(len(grad)), key=grad.__getitem__)]
