"""Correct, written differently: returns a named tuple, zeroes with set_to_none=False, skipped from the scaler's own inf record."""
import collections
import torch

EXPECT_PASS = True


StepResult = collections.namedtuple("StepResult", "loss grad_norm skipped")


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    optimizer.zero_grad(set_to_none=False)
    with torch.autocast(device_type=inputs.device.type, dtype=dtype):
        loss = loss_fn(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    norms = [torch.norm(p.grad.detach(), p=2) for p in model.parameters() if p.grad is not None]
    grad_norm = float(torch.norm(torch.stack(norms), p=2)) if norms else 0.0
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    skipped = bool(scaler.is_enabled() and any(v.item() != 0 for v in scaler._found_inf_per_device(optimizer).values()))
    scaler.step(optimizer)
    scaler.update()
    return StepResult(float(loss), grad_norm, skipped)
