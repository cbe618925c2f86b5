"""Bug: averages the gradients, then also averages every floating-point buffer (e.g. BatchNorm running statistics) over the ranks, so the buffers change."""
import torch.distributed as dist

EXPECT_FAIL = {
    'leaves_the_weights_alone': 'the buffers (or the whole state_dict) were',
}


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, group=group)
            p.grad /= n
    for b in model.buffers():
        if b.is_floating_point():
            dist.all_reduce(b, group=group)
            b /= n
