"""Correct, written differently: norm from clip_grad_norm_ or a stack of per-tensor norms, and skipped as "enabled scaler whose scale went down"."""
import torch

EXPECT_PASS = True


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    model.zero_grad()

    with torch.autocast(inputs.device.type, dtype):
        output = model(inputs)
        loss = loss_fn(output, targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)

    if max_norm is not None:
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm).item()
    else:
        norms = [torch.norm(p.grad) for p in model.parameters() if p.grad is not None]
        grad_norm = torch.norm(torch.stack(norms)).item() if norms else 0.0

    old_scale = scaler.get_scale()
    scaler.step(optimizer)
    scaler.update()
    if scaler.is_enabled():
        skipped = scaler.get_scale() < old_scale
    else:
        skipped = False
    return loss.item(), grad_norm, skipped
