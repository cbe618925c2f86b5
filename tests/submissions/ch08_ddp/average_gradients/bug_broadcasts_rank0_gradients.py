"""Bug: broadcasts rank 0's gradients to the other ranks, so the ranks agree but hold rank 0's gradient instead of the mean."""
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': "the rank's own gradient is left as",
    'averages_on_three_ranks': "the rank's own gradient is left as",
    'skips_parameters_without_gradients': "the rank's own gradient is left as",
    'averages_within_a_group': "the rank's own gradient is left as",
    'leaves_the_weights_alone': "the rank's own gradient is left as",
}


def average_gradients(model, group=None):
    src = 0 if group is None else dist.get_process_group_ranks(group)[0]
    for p in model.parameters():
        if p.grad is not None:
            dist.broadcast(p.grad, src=src, group=group)
