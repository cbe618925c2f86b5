"""Bug: the weights of the exponential average are swapped: s_i = (1 - smooth) * loss_i + smooth * s_(i-1)."""
import copy

import numpy as np

EXPECT_FAIL = {"smoothed_losses": "swapped"}


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    if start_lr <= 0:
        raise ValueError("start_lr must be > 0")
    if end_lr <= start_lr:
        raise ValueError("end_lr must be > start_lr")
    if num_iter < 2:
        raise ValueError("num_iter must be >= 2")
    saved = copy.deepcopy(model.state_dict()), copy.deepcopy(optimizer.state_dict())
    modes = {m: m.training for m in model.modules()}
    model.train()
    lrs, losses = [], []
    batches = iter(loader)
    avg = None
    for i in range(num_iter):
        lr = start_lr * (end_lr / start_lr) ** (i / (num_iter - 1))
        for g in optimizer.param_groups:
            g["lr"] = lr
        try:
            xb, yb = next(batches)
        except StopIteration:
            batches = iter(loader)
            xb, yb = next(batches)
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
        value = loss.item()
        avg = value if avg is None else (1 - smooth) * value + smooth * avg
        lrs.append(lr)
        losses.append(avg)
        if avg > diverge_threshold * min(losses):
            break
    model.load_state_dict(saved[0])
    optimizer.load_state_dict(saved[1])
    for m, t in modes.items():
        m.training = t
    return lrs, losses


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    kept = np.array(losses[skip_start:len(losses) - skip_end], dtype=float)
    if len(kept) < 2:
        raise ValueError("not enough points")
    return float(lrs[skip_start + int(np.gradient(kept).argmin())])
