"""Bug: all_reduces a clone of each gradient and divides it, but never writes the result back, so the gradients stay local."""
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
    for p in model.parameters():
        if p.grad is None:
            continue
        grad = p.grad.clone()
        dist.all_reduce(grad, group=group)
        grad /= n
