"""Correct, written differently: lr *= factor each iteration, the loader restarted from a generator of passes, and
group.update(lr=...)."""
import copy
import itertools
import numpy as np

EXPECT_PASS = True


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    if not (start_lr > 0 and end_lr > start_lr and num_iter >= 2):
        raise ValueError("invalid arguments")
    saved_model = {k: v.clone() for k, v in model.state_dict().items()}
    saved_opt = copy.deepcopy(optimizer.state_dict())
    saved_modes = [m.training for m in model.modules()]
    factor = (end_lr / start_lr) ** (1 / (num_iter - 1))
    lr = start_lr
    lrs, losses = [], []
    best = float("inf")
    model.train()
    data = itertools.chain.from_iterable(loader for _ in itertools.count())  # a new pass (iter(loader)) each time
    for i in range(num_iter):
        for group in optimizer.param_groups:
            group.update(lr=lr)
        inputs, targets = next(data)
        model.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        s = loss.item() if i == 0 else smooth * loss.item() + (1 - smooth) * losses[-1]
        lrs.append(lr)
        losses.append(s)
        best = min(best, s)
        if s > diverge_threshold * best:
            break
        lr *= factor
    model.load_state_dict(saved_model)
    optimizer.load_state_dict(saved_opt)
    for m, t in zip(model.modules(), saved_modes):
        m.training = t
    return lrs, losses

def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    end = len(losses) - skip_end
    if end - skip_start < 2:
        raise ValueError("fewer than 2 points")
    g = np.gradient(np.array(losses[skip_start:end]))
    return lrs[skip_start:end][int(g.argmin())]
