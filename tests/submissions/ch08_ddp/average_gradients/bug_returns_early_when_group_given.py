"""Bug: only handles the default group: when a group is passed it returns at once, leaving the gradients local."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_within_a_group': "the rank's own gradient is left as",
}


def average_gradients(model, group=None):
    if group is not None:
        return
    n = dist.get_world_size()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= n
