"""Bug: ignores the group argument: all_reduces over all ranks and divides by the global world size, so with a sub-group the ranks outside it (which never call) block the collective."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_within_a_group': 'called ALLREDUCE on a float tensor',
}


def average_gradients(model, group=None):
    n = dist.get_world_size()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= n
