"""Bug: zeroes the gradients at the end of the step instead of the start, so gradients left before the call are added into this step."""
import torch

EXPECT_FAIL = {'zeroes_stale_gradients': 'the gradients were not zeroed at the'}


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
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
    optimizer.zero_grad()
    return loss.item(), grad_norm.item(), not stepped
