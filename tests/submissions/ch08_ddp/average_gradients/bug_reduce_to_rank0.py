"""Bug: uses dist.reduce to rank 0 instead of all_reduce: only rank 0 ends up with the mean, the other ranks keep a partial result divided by the world size."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': 'only rank 0 holds the mean',
    'averages_on_three_ranks': 'only rank 0 holds the mean',
    'skips_parameters_without_gradients': 'only rank 0 holds the mean',
    'averages_within_a_group': 'waited in a collective for rank',
    'leaves_the_weights_alone': 'only rank 0 holds the mean',
}


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    for p in model.parameters():
        if p.grad is not None:
            dist.reduce(p.grad, dst=0, group=group)
            p.grad /= n
