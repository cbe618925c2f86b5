"""Bug: averages only the parameters whose name contains "weight", so the biases keep their local gradients."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': "the rank's own gradient is left as",
    'averages_on_three_ranks': "the rank's own gradient is left as",
    'skips_parameters_without_gradients': "the rank's own gradient is left as",
    'averages_within_a_group': "the rank's own gradient is left as",
    'leaves_the_weights_alone': "the rank's own gradient is left as",
}


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    for name, p in model.named_parameters():
        if "weight" in name and p.grad is not None:
            dist.all_reduce(p.grad, group=group)
            p.grad /= n
