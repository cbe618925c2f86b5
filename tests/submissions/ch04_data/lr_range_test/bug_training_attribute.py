"""Bug: sets model.training = True, which changes the top module only."""
import copy
import math

import numpy as np

EXPECT_FAIL = {'trains_in_train_mode': 'top module only'}


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    if start_lr <= 0 or end_lr <= start_lr or num_iter < 2:
        raise ValueError("expected 0 < start_lr < end_lr and num_iter >= 2")
    model_state = copy.deepcopy(model.state_dict())
    optimizer_state = copy.deepcopy(optimizer.state_dict())
    training = [(module, module.training) for module in model.modules()]
    model.training = True
    lrs, losses = [], []
    stream = iter(loader)
    best = math.inf
    for i in range(num_iter):
        lr = start_lr * (end_lr / start_lr) ** (i / (num_iter - 1))
        for group in optimizer.param_groups:
            group["lr"] = lr
        try:
            inputs, targets = next(stream)
        except StopIteration:
            stream = iter(loader)
            inputs, targets = next(stream)
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        current = loss.item()
        smoothed = current if i == 0 else smooth * current + (1 - smooth) * losses[-1]
        lrs.append(lr)
        losses.append(smoothed)
        best = min(best, smoothed)
        if smoothed > diverge_threshold * best:
            break
    model.load_state_dict(model_state)
    optimizer.load_state_dict(optimizer_state)
    for module, mode in training:
        module.training = mode
    return lrs, losses


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    end = len(losses) - skip_end
    window = np.asarray(losses[skip_start:end], dtype=float)
    if window.size < 2:
        raise ValueError("fewer than 2 points left after trimming")
    return float(lrs[skip_start + int(np.argmin(np.gradient(window)))])
