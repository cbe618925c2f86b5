"""Bug: calls optimizer.step() instead of scaler.step(optimizer), so the parameters move even when the gradients overflowed."""
import torch

EXPECT_FAIL = {'skips_overflowing_step': 'optimizer.step'}


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    optimizer.zero_grad()
    with torch.autocast(inputs.device.type, dtype):
        outputs = model(inputs)
        loss = loss_fn(outputs, targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    grad_norm = torch.nn.utils.get_total_norm(grads)
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    old_scale = scaler.get_scale()
    optimizer.step()
    scaler.update()
    stepped = not (scaler.is_enabled() and scaler.get_scale() < old_scale)
    return loss.item(), grad_norm.item(), not stepped
