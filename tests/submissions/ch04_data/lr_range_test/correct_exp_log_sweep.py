"""Correct, written differently: math.exp/log form of the sweep, StopIteration restart, named_modules modes restored with train(flag)."""
import copy
import math
import numpy as np
import torch

EXPECT_PASS = True


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    if start_lr <= 0:
        raise ValueError("start_lr")
    if end_lr <= start_lr:
        raise ValueError("end_lr")
    if num_iter < 2:
        raise ValueError("num_iter")
    model_sd = copy.deepcopy(model.state_dict())
    opt_sd = copy.deepcopy(optimizer.state_dict())
    modes = {name: m.training for name, m in model.named_modules()}
    model.train()
    it = iter(loader)
    lrs, losses = [], []
    best = None
    avg = None
    for i in range(num_iter):
        lr = math.exp(math.log(start_lr) + i * (math.log(end_lr) - math.log(start_lr)) / (num_iter - 1))
        for g in optimizer.param_groups:
            g["lr"] = lr
        try:
            xb, yb = next(it)
        except StopIteration:
            it = iter(loader)
            xb, yb = next(it)
        optimizer.zero_grad()
        out = model(xb)
        loss = loss_fn(out, yb)
        loss.backward()
        optimizer.step()
        l = float(loss)
        avg = l if avg is None else smooth * l + (1 - smooth) * avg
        lrs.append(lr)
        losses.append(avg)
        best = avg if best is None else min(best, avg)
        if avg > diverge_threshold * best:
            break
    model.load_state_dict(model_sd)
    optimizer.load_state_dict(opt_sd)
    for name, m in model.named_modules():
        m.train(modes[name])
    return lrs, losses

def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    l = np.asarray(losses, dtype=float)[skip_start:len(losses) - skip_end]
    r = np.asarray(lrs, dtype=float)[skip_start:len(lrs) - skip_end]
    if l.size < 2:
        raise ValueError("not enough points")
    return float(r[np.argmin(np.gradient(l))])
