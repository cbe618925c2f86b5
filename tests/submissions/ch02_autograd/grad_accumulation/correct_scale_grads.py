"""Correct, written differently: backward on the unscaled losses, then divide the summed .grad by
accum_steps before stepping (zero_grad with set_to_none=False)."""
EXPECT_PASS = True

import torch


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1:
        raise ValueError("accum_steps < 1")
    if len(micro_batches) % accum_steps != 0:
        raise ValueError("len(micro_batches) is not a multiple of accum_steps")
    out = []
    it = iter(micro_batches)
    for _ in range(len(micro_batches) // accum_steps):
        optimizer.zero_grad(set_to_none=False)
        losses = []
        for _ in range(accum_steps):
            x, y = next(it)
            loss = loss_fn(model(x), y)
            loss.backward()
            losses.append(loss.detach())
        with torch.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad.div_(accum_steps)
        optimizer.step()
        out.append(torch.stack(losses).mean().item())
    return out
