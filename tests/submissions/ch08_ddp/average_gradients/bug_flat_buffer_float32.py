"""Bug: builds the flat buffer in float32 and assigns slices of it as the new gradients, so a float64 model gets float32 gradients, which PyTorch refuses."""
import torch
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_three_ranks': 'raised RuntimeError',
}


def average_gradients(model, group=None):
    params = [p for p in model.parameters() if p.grad is not None]
    flat = torch.zeros(sum(p.numel() for p in params), dtype=torch.float32, device=params[0].device)
    offset = 0
    for p in params:
        flat[offset:offset + p.numel()] = p.grad.reshape(-1)
        offset += p.numel()
    dist.all_reduce(flat, group=group)
    flat /= dist.get_world_size(group)
    offset = 0
    for p in params:
        p.grad = flat[offset:offset + p.numel()].view_as(p)
        offset += p.numel()
