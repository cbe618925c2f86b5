"""Correct, written differently: whether optimizer.step ran is seen through a global step pre-hook (on every
optimizer), removed in a finally; the norm as the 2-norm of all gradients concatenated."""
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

EXPECT_PASS = True


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    for group in optimizer.param_groups:
        for p in group["params"]:
            p.grad = None
    with torch.autocast(device_type=inputs.device.type, dtype=dtype):
        out = model(inputs)
        loss = loss_fn(out, targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    flat = [p.grad.detach().reshape(-1).double() for p in model.parameters() if p.grad is not None]
    grad_norm = float(torch.cat(flat).norm()) if flat else 0.0
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)
    ran = []
    handle = register_optimizer_step_pre_hook(lambda opt, *_: ran.append(opt) if opt is optimizer else None)
    try:
        scaler.step(optimizer)
    finally:
        handle.remove()
    scaler.update()
    return float(loss.item()), grad_norm, len(ran) == 0
