"""Bug: all-reduces p.grad.contiguous() to be safe with gloo; for a non-contiguous gradient (e.g. a channels_last
conv weight) .contiguous() is a copy, so the reduced sum never reaches p.grad, which is just divided."""
EXPECT_FAIL = {"averages_generated_models": "not the mean over the ranks"}
import torch.distributed as dist


def average_gradients(model, group=None):
    size = dist.get_world_size(group)
    for p in model.parameters():
        if p.grad is None:
            continue
        dist.all_reduce(p.grad.contiguous(), op=dist.ReduceOp.SUM, group=group)
        p.grad.div_(size)
