"""Bug: clips only the first parameter group's gradients (optimizer.param_groups[0]["params"]), which is every
parameter only while the optimizer has one group; the specification clips the model's parameters."""
import torch

EXPECT_FAIL = {'generated_setups': 'SGD with two parameter groups'}


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    optimizer.zero_grad()
    with torch.autocast(inputs.device.type, dtype):
        outputs = model(inputs)
        loss = loss_fn(outputs, targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    grad_norm = torch.nn.utils.get_total_norm(grads).item() if grads else 0.0
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(optimizer.param_groups[0]["params"], max_norm)
    called = []
    handle = optimizer.register_step_pre_hook(lambda *args: called.append(1))
    try:
        scaler.step(optimizer)
    finally:
        handle.remove()
    scaler.update()
    return loss.item(), grad_norm, not called
