"""Bug: averages the weights (p.data) over the ranks instead of the gradients: the gradients stay local and the weights change."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': "the rank's own gradient is left as",
    'averages_on_three_ranks': "the rank's own gradient is left as",
    'skips_parameters_without_gradients': "the rank's own gradient is left as",
    'averages_within_a_group': "the rank's own gradient is left as",
    'leaves_the_weights_alone': 'the parameters (or the whole state_dict) were',
}


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    for p in model.parameters():
        if p.grad is None:
            continue
        dist.all_reduce(p.data, group=group)
        p.data /= n
