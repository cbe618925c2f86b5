"""Bug: reports skipped whenever the scale did not grow, which is wrong between growth steps and for a disabled scaler whose scale stays 1.0."""
import torch

EXPECT_FAIL = {
    'disabled_scaler_never_skips': 'a disabled scaler',
    'skips_overflowing_step': 'the step was taken but reported as',
}


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
    before = scaler.get_scale()
    scaler.step(optimizer)
    scaler.update()
    stepped = scaler.get_scale() > before
    return loss.item(), grad_norm.item(), not stepped
