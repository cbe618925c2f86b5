"""Bug: builds its own GradScaler inside the function instead of using the one passed in, so the caller's scale never changes."""
import torch

EXPECT_FAIL = {
    'matches_reference_step': 'not a GradScaler of your own made inside the step',
    'skips_overflowing_step': 'not a GradScaler of your own made inside the step',
}


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    scaler = torch.amp.GradScaler(inputs.device.type, enabled=dtype == torch.float16)
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
    stepped = []
    handle = optimizer.register_step_pre_hook(lambda opt, args, kwargs: stepped.append(True))
    scaler.step(optimizer)
    handle.remove()
    scaler.update()
    return loss.item(), grad_norm.item(), not stepped
