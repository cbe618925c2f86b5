"""Bug: skipped is a NumPy bool (np.bool_ is not a Python bool)."""
import torch

EXPECT_FAIL = {'returns_unscaled_loss_and_norm': 'skipped is a NumPy bool'}



def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    optimizer.zero_grad()
    with torch.autocast(inputs.device.type, dtype):
        outputs = model(inputs)
        loss = loss_fn(outputs, targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    norm = torch.nn.utils.get_total_norm(grads).item() if grads else 0.0
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    called = []
    h = optimizer.register_step_pre_hook(lambda *a: called.append(1))
    try:
        scaler.step(optimizer)
    finally:
        h.remove()
    scaler.update()
    import numpy as np
    return loss.item(), norm, np.bool_(not called)
