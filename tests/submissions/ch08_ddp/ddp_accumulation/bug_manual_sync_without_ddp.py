"""Bug (hostile): steps through ddp_model.module and averages the gradients with its own all_reduce, so DDP never all-reduces a bucket and no_sync is never used."""
import torch.distributed as dist

EXPECT_FAIL = {'all_reduces_once_per_call': 'on rank 0, no forward ran through'}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("empty")
    n = len(micro_batches)
    model = ddp_model.module
    optimizer.zero_grad()
    total = 0.0
    for inputs, targets in micro_batches:
        loss = loss_fn(model(inputs), targets)
        (loss / n).backward()
        total += loss.item()
    world = dist.get_world_size()
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= world
    optimizer.step()
    return total / n
