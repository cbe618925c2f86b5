"""Correct, the plain way: get_total_norm over the gradients, and a step pre-hook on the optimizer tells whether scaler.step really stepped."""
import torch

EXPECT_PASS = True


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

    calls = []
    handle = optimizer.register_step_pre_hook(lambda opt, args, kwargs: calls.append(1))
    try:
        scaler.step(optimizer)
    finally:
        handle.remove()
    scaler.update()
    return loss.item(), grad_norm.item(), len(calls) == 0
