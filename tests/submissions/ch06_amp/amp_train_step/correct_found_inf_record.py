"""Correct, written differently: a norm over all gradients flattened into one vector, and skipped read from the inf checks unscale_ recorded for this optimizer."""
import torch

EXPECT_PASS = True


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=inputs.device.type, dtype=dtype):
        out = model(inputs)
        loss = loss_fn(out, targets)
    scaler.scale(loss).backward()

    scaler.unscale_(optimizer)
    flat = [p.grad.reshape(-1) for p in model.parameters() if p.grad is not None]
    if flat:
        grad_norm = torch.linalg.vector_norm(torch.cat(flat)).item()
    else:
        grad_norm = 0.0
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)

    # what scaler.step itself looks at (a disabled scaler always steps)
    skipped = False
    if scaler.is_enabled():
        found = scaler._found_inf_per_device(optimizer)
        skipped = sum(v.item() for v in found.values()) > 0

    scaler.step(optimizer)
    scaler.update()
    return loss.item(), grad_norm, skipped
