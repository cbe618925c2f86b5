"""Bug: assumes every parameter has a gradient and crashes on frozen or unused parameters."""
import torch

EXPECT_FAIL = {
    'matches_reference_step': 'raised AttributeError',
    'returns_unscaled_loss_and_norm': 'raised AttributeError',
}


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    optimizer.zero_grad()
    with torch.autocast(inputs.device.type, dtype):
        outputs = model(inputs)
        loss = loss_fn(outputs, targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    grad_norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()]))
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    stepped = []
    handle = optimizer.register_step_pre_hook(lambda opt, args, kwargs: stepped.append(True))
    scaler.step(optimizer)
    handle.remove()
    scaler.update()
    return loss.item(), grad_norm.item(), not stepped
