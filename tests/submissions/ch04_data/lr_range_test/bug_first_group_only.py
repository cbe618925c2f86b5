"""Bug: sets the learning rate on the first param group only."""
import copy

import numpy as np

EXPECT_FAIL = {'geometric_sweep': 'every param group'}


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    if start_lr <= 0 or end_lr <= start_lr or num_iter < 2:
        raise ValueError("need 0 < start_lr < end_lr and num_iter >= 2")
    saved_model = copy.deepcopy(model.state_dict())
    saved_optimizer = copy.deepcopy(optimizer.state_dict())
    saved_modes = {name: m.training for name, m in model.named_modules()}
    model.train()
    lrs, losses = [], []
    it = iter(loader)
    for i in range(num_iter):
        lr = start_lr * (end_lr / start_lr) ** (i / (num_iter - 1))
        optimizer.param_groups[0]["lr"] = lr
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(loader)
            x, y = next(it)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        value = loss.item()
        s = value if i == 0 else smooth * value + (1 - smooth) * losses[-1]
        lrs.append(lr)
        losses.append(s)
        if s > diverge_threshold * min(losses):
            break
    model.load_state_dict(saved_model)
    optimizer.load_state_dict(saved_optimizer)
    for name, m in model.named_modules():
        m.training = saved_modes[name]
    return lrs, losses


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    end = len(losses) - skip_end
    kept = np.asarray(losses[skip_start:end], dtype=float)
    if len(kept) < 2:
        raise ValueError("fewer than 2 points after trimming")
    return float(lrs[skip_start + int(np.argmin(np.gradient(kept)))])
