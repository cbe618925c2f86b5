"""Bug: when max_norm is None it still calls clip_grad_norm_(..., inf) to get the norm; with one NaN gradient the clip coefficient is NaN and every gradient becomes NaN."""
import math
import torch

EXPECT_FAIL = {'disabled_scaler_never_skips': ''}



def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    optimizer.zero_grad()
    with torch.autocast(inputs.device.type, dtype):
        loss = loss_fn(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    limit = math.inf if max_norm is None else max_norm
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), limit).item()
    called = []
    h = optimizer.register_step_pre_hook(lambda *a: called.append(1))
    try:
        scaler.step(optimizer)
    finally:
        h.remove()
    scaler.update()
    return loss.item(), grad_norm, not called
