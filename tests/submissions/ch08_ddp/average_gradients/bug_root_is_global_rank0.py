"""Bug (only for groups without rank 0): reduce onto global rank 0, divide there, broadcast from global rank 0. Right for the default group and for any group holding rank 0; for new_group([1, 2]) rank 0 is not a member and the collectives fail. (from an independent red team)."""
EXPECT_FAIL = {
    'averages_within_a_group': 'waited in a collective for rank',
}

import torch.distributed as dist


def average_gradients(model, group=None):
    size = dist.get_world_size(group)
    for p in model.parameters():
        if p.grad is None:
            continue
        dist.reduce(p.grad, dst=0, group=group)
        if dist.get_rank() == 0:
            p.grad.div_(size)
        dist.broadcast(p.grad, src=0, group=group)
