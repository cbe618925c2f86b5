"""Correct, written differently: model.zero_grad, a hand-written float64 norm, and skipped read off a drop of the scale (only for an enabled scaler)."""
import math

import torch

EXPECT_PASS = True


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    device_type = inputs.device.type
    model.zero_grad(set_to_none=True)

    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = loss_fn(model(inputs), targets)

    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)

    total = 0.0
    for p in model.parameters():
        if p.grad is not None:
            total += torch.linalg.vector_norm(p.grad.double()).item() ** 2
    grad_norm = math.sqrt(total)

    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)

    scale_before = scaler.get_scale()
    scaler.step(optimizer)
    scaler.update()
    skipped = scaler.is_enabled() and scaler.get_scale() < scale_before
    return float(loss.detach()), float(grad_norm), bool(skipped)
