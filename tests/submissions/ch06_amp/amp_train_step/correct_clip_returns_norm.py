"""Correct, written differently: uses the pre-clip norm that clip_grad_norm_ returns, and wraps optimizer.step for the call to find out if it ran."""
import torch
from torch.nn.utils import clip_grad_norm_, get_total_norm

EXPECT_PASS = True


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(inputs.device.type, dtype=dtype):
        preds = model(inputs)
        loss = loss_fn(preds, targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)

    params = [p for p in model.parameters() if p.grad is not None]
    if max_norm is not None:
        norm = clip_grad_norm_(params, max_norm)
    else:
        norm = get_total_norm([p.grad for p in params])

    ran = {"step": False}
    had_own = "step" in optimizer.__dict__
    original = optimizer.step

    def watched_step(*args, **kwargs):
        ran["step"] = True
        return original(*args, **kwargs)

    optimizer.step = watched_step
    try:
        scaler.step(optimizer)
    finally:
        if had_own:
            optimizer.step = original
        else:
            del optimizer.step
    scaler.update()
    return float(loss.item()), float(norm), not ran["step"]
