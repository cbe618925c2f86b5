"""Bug: divides the summed gradients by a hard-coded 2 (the world size of the notebook's runs), which is wrong for any other number of ranks."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_three_ranks': 'is not the mean over the ranks [0',
    'averages_within_a_group': "divided by 2 (an earlier call's group",
}


def average_gradients(model, group=None):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, group=group)
            p.grad /= 2
