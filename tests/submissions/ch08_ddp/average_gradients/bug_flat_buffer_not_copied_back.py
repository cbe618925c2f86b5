"""Bug: concatenates the gradients into one flat buffer and averages it, but never copies the averaged values back into the .grad tensors."""
import torch
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_on_two_ranks': "the rank's own gradient is left as",
    'averages_on_three_ranks': "the rank's own gradient is left as",
    'skips_parameters_without_gradients': "the rank's own gradient is left as",
    'averages_within_a_group': "the rank's own gradient is left as",
    'leaves_the_weights_alone': "the rank's own gradient is left as",
}


def average_gradients(model, group=None):
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, group=group)
    flat /= dist.get_world_size(group)
