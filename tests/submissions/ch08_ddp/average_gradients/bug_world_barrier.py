"""Bug: averages correctly over the group but finishes with a barrier on the default group, which waits for ranks outside the group that never call the function."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_within_a_group': 'waited in a collective for rank',
}


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, group=group)
            p.grad /= n
    dist.barrier()
