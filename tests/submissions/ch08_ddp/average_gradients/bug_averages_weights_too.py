"""Bug: averages the gradients correctly but also averages the weights over the ranks, so the parameters change."""
import torch.distributed as dist

EXPECT_FAIL = {
    'leaves_the_weights_alone': 'the parameters (or the whole state_dict) were',
    'averages_within_a_group': 'changed',
}


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    for p in model.parameters():
        if p.grad is None:
            continue
        for t in (p.grad, p.data):
            dist.all_reduce(t, group=group)
            t /= n
