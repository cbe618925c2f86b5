"""Bug: skips parameters with requires_grad=False but not the trainable ones that were unused by forward, so all_reduce(None) crashes on those."""
import torch.distributed as dist

EXPECT_FAIL = {
    'skips_parameters_without_gradients': 'a parameter without a gradient (p.grad is',
}


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    for p in model.parameters():
        if not p.requires_grad:
            continue
        dist.all_reduce(p.grad, group=group)
        p.grad /= n
