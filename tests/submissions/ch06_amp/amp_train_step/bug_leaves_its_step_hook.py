"""Bug: sees whether optimizer.step ran through a step pre-hook, and never removes it: every later step of that
optimizer (this function's or anyone's) runs the hook again, and the list it appends to grows for ever."""
import torch

EXPECT_FAIL = {"generated_setups": "more step hook(s) than before the call"}


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    optimizer.zero_grad()
    with torch.autocast(inputs.device.type, dtype=dtype):
        loss = loss_fn(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    grads = [p.grad.detach().float().norm() for p in model.parameters() if p.grad is not None]
    grad_norm = torch.stack(grads).norm().item() if grads else 0.0
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    stepped = []
    optimizer.register_step_pre_hook(lambda *_: stepped.append(True))
    scaler.step(optimizer)
    scaler.update()
    return loss.item(), grad_norm, not stepped
