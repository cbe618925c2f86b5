"""Bug: only rank 0 calls all_reduce (the others wait for nothing), so the collective never completes: the ranks hang."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': 'called ALLREDUCE on a float tensor',
    'averages_on_three_ranks': 'called ALLREDUCE on a double tensor',
    'skips_parameters_without_gradients': 'called ALLREDUCE on a float tensor',
    'averages_within_a_group': 'waited in a collective for rank',
    'leaves_the_weights_alone': 'called ALLREDUCE on a float tensor',
}


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    if dist.get_rank() != 0:
        return
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, group=group)
            p.grad /= n
