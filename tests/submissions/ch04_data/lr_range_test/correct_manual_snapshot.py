"""Correct, written differently: the lrs from exp(linspace(log)), restart by counting batches against
len(loader), a hand-made snapshot (parameter and buffer clones copied back in place, the optimizer state
tensors cloned one by one), zero_grad(set_to_none=False), and a while loop. suggest_lr slices with
an explicit stop and calls torch.gradient on float64."""
import math

import numpy as np
import torch

EXPECT_PASS = True


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    if start_lr <= 0 or end_lr <= start_lr or num_iter < 2:
        raise ValueError("lr_range_test: need 0 < start_lr < end_lr and num_iter >= 2")
    tensors = [t for t in list(model.parameters()) + list(model.buffers())]
    saved_tensors = [t.detach().clone() for t in tensors]
    saved_groups = [{k: v for k, v in group.items() if k != "params"} for group in optimizer.param_groups]
    saved_state = {p: {k: (v.clone() if torch.is_tensor(v) else v) for k, v in s.items()}
                   for p, s in optimizer.state.items()}
    saved_modes = {module: module.training for module in model.modules()}
    schedule = np.exp(np.linspace(math.log(start_lr), math.log(end_lr), num_iter)).tolist()
    model.train()
    lrs, losses = [], []
    per_pass = len(loader)
    position, batches = 0, iter(loader)
    lowest = float("inf")
    i = 0
    while i < num_iter:
        if position == per_pass:
            position, batches = 0, iter(loader)
        inputs, targets = next(batches)
        position += 1
        for group in optimizer.param_groups:
            group["lr"] = schedule[i]
        optimizer.zero_grad(set_to_none=False)
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        smoothed = loss.item() if i == 0 else losses[-1] + smooth * (loss.item() - losses[-1])
        lrs.append(schedule[i])
        losses.append(smoothed)
        lowest = min(lowest, smoothed)
        i += 1
        if smoothed > diverge_threshold * lowest:
            break
    with torch.no_grad():
        for t, old in zip(tensors, saved_tensors):
            t.copy_(old)
    for group, old in zip(optimizer.param_groups, saved_groups):
        group.update(old)
    optimizer.state.clear()
    for p, s in saved_state.items():
        optimizer.state[p] = s
    for module, mode in saved_modes.items():
        module.training = mode
    return lrs, losses


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    stop = len(losses) - skip_end
    if stop - skip_start < 2:
        raise ValueError(f"{max(stop - skip_start, 0)} points after trimming; 2 are needed")
    slope = torch.gradient(torch.tensor(losses[skip_start:stop], dtype=torch.float64))[0]
    return lrs[skip_start + int(slope.argmin())]
