"""Bug: returns from inside the loop as soon as the loss diverges, so the restore at the end never runs."""
import copy

import numpy as np

EXPECT_FAIL = {"restores_parameters_and_buffers": "finally", "restores_optimizer": "early exit"}


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    if start_lr <= 0 or end_lr <= start_lr or num_iter < 2:
        raise ValueError("need 0 < start_lr < end_lr and num_iter >= 2")
    model_backup = copy.deepcopy(model.state_dict())
    optimizer_backup = copy.deepcopy(optimizer.state_dict())
    flags = [(m, m.training) for m in model.modules()]
    model.train()
    lrs, losses = [], []
    data = iter(loader)
    lowest = None
    for i in range(num_iter):
        lr = start_lr * (end_lr / start_lr) ** (i / (num_iter - 1))
        for group in optimizer.param_groups:
            group["lr"] = lr
        try:
            inputs, targets = next(data)
        except StopIteration:
            data = iter(loader)
            inputs, targets = next(data)
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        smoothed = loss.item() if i == 0 else smooth * loss.item() + (1 - smooth) * losses[-1]
        lrs.append(lr)
        losses.append(smoothed)
        lowest = smoothed if lowest is None else min(lowest, smoothed)
        if smoothed > diverge_threshold * lowest:
            return lrs, losses  # diverged: done
    model.load_state_dict(model_backup)
    optimizer.load_state_dict(optimizer_backup)
    for m, was in flags:
        m.training = was
    return lrs, losses


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    stop = len(losses) - skip_end
    kept = np.asarray(losses[skip_start:stop], dtype=float)
    if kept.size < 2:
        raise ValueError("too few points")
    return float(lrs[skip_start + int(np.argmin(np.gradient(kept)))])
