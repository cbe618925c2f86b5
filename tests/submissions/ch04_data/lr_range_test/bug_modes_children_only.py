"""Bug: saves and restores the training mode of the model and its direct children only: a BatchNorm frozen in eval two levels down comes back in training mode."""
EXPECT_FAIL = {"restores_training_mode": "direct children"}
import copy
import itertools
import math

import numpy as np
import torch


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    if start_lr <= 0 or end_lr <= start_lr or num_iter < 2:
        raise ValueError("bad arguments")
    saved_model = copy.deepcopy(model.state_dict())
    saved_opt = copy.deepcopy(optimizer.state_dict())
    saved_modes = [(model, model.training)] + [(m, m.training) for m in model.children()]
    lrs, losses = [], []
    model.train()
    it = iter(loader)
    best = math.inf
    s = None
    for i in range(num_iter):
        lr = start_lr * (end_lr / start_lr) ** (i / (num_iter - 1))
        for g in optimizer.param_groups:
            g["lr"] = lr
        try:
            inputs, targets = next(it)
        except StopIteration:
            it = iter(loader)
            inputs, targets = next(it)
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        value = loss.item()
        s = value if i == 0 else smooth * value + (1 - smooth) * s
        lrs.append(lr)
        losses.append(s)
        best = min(best, s)
        if s > diverge_threshold * best:
            break
    model.load_state_dict(saved_model)
    optimizer.load_state_dict(saved_opt)
    for m, t in saved_modes:
        m.training = t
    return lrs, losses


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    stop = max(len(losses) - skip_end, 0)
    kl, ks = list(lrs)[skip_start:stop], list(losses)[skip_start:stop]
    if len(ks) < 2:
        raise ValueError("fewer than 2 points")
    return float(kl[int(np.argmin(np.gradient(np.asarray(ks, dtype=float))))])
