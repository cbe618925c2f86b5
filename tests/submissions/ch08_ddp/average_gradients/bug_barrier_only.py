"""Bug: only synchronises the ranks with a barrier on the group and returns, as if waiting for each other averaged the gradients."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': "the rank's own gradient is left as",
    'averages_on_three_ranks': "the rank's own gradient is left as",
    'skips_parameters_without_gradients': "the rank's own gradient is left as",
    'averages_within_a_group': "the rank's own gradient is left as",
    'leaves_the_weights_alone': "the rank's own gradient is left as",
}


def average_gradients(model, group=None):
    dist.barrier(group=group)
