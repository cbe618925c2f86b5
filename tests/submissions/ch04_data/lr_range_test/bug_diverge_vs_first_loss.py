"""Bug: the divergence test compares s_i with the first smoothed loss s_0 instead of min(s_0..s_i)."""
import copy
import math
import numpy as np
import torch

# No cause is named: in both diverging runs, s_i > diverge_threshold + min(...) stops where this does (issue 32).
EXPECT_FAIL = {"stops_on_divergence": "the run stopped at the wrong iteration"}


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    if start_lr <= 0 or end_lr <= start_lr or num_iter < 2:
        raise ValueError("bad arguments")
    model_state = copy.deepcopy(model.state_dict())
    opt_state = copy.deepcopy(optimizer.state_dict())
    modes = [(m, m.training) for m in model.modules()]
    lrs, losses = [], []
    model.train()
    it = iter(loader)
    best = float("inf")
    for i in range(num_iter):
        lr = start_lr * (end_lr / start_lr) ** (i / (num_iter - 1))
        for g in optimizer.param_groups:
            g['lr'] = lr
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(loader)
            x, y = next(it)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        v = loss.item()
        s = v if not losses else smooth * v + (1 - smooth) * losses[-1]
        lrs.append(lr)
        losses.append(s)
        best = min(best, s)
        if s > diverge_threshold * losses[0]:
            break
    model.load_state_dict(model_state)
    optimizer.load_state_dict(opt_state)
    for m, t in modes:
        m.training = t
    return lrs, losses


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    kept = np.array(losses[skip_start:len(losses) - skip_end])
    if kept.size < 2:
        raise ValueError("too few")
    return lrs[skip_start + int(np.argmin(np.gradient(kept)))]
