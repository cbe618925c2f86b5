"""Bug: closes the autocast block after the forward, so loss_fn runs outside autocast."""
import torch

EXPECT_FAIL = {'autocast_forward_only': 'the forward and the loss must run'}


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
    stepped = []
    handle = optimizer.register_step_pre_hook(lambda opt, args, kwargs: stepped.append(True))
    scaler.step(optimizer)
    handle.remove()
    scaler.update()
    return loss.item(), grad_norm.item(), not stepped
