"""Never trains: records the lrs of the spec and the smoothed losses of forward passes, but never calls
backward or step, so the state it "restores" never changed. suggest_lr returns the middle lr."""
import math

import torch

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    if start_lr <= 0 or end_lr <= start_lr or num_iter < 2:
        raise ValueError("bad arguments")
    state = {k: v.clone() for k, v in model.state_dict().items()}
    modes = [(m, m.training) for m in model.modules()]
    model.train()
    lrs, losses = [], []
    batches = iter(loader)
    best = math.inf
    with torch.no_grad():
        for i in range(num_iter):
            try:
                x, y = next(batches)
            except StopIteration:
                batches = iter(loader)
                x, y = next(batches)
            value = loss_fn(model(x), y).item()
            s = value if i == 0 else smooth * value + (1 - smooth) * losses[-1]
            lrs.append(start_lr * (end_lr / start_lr) ** (i / (num_iter - 1)))
            losses.append(s)
            best = min(best, s)
            if s > diverge_threshold * best:
                break
    model.load_state_dict(state)
    for m, t in modes:
        m.training = t
    return lrs, losses


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    if len(lrs) - skip_start - skip_end < 2:
        raise ValueError("too few")
    return lrs[len(lrs) // 2]
