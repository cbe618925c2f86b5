"""Bug: does no communication at all and, at import, replaces DistributedDataParallel with a function returning the bare module, hoping the reference gradients come out local too."""
import torch
import torch.nn.parallel
import torch.nn.parallel.distributed

EXPECT_FAIL = {
    'averages_on_two_ranks': "the rank's own gradient is left as",
    'averages_on_three_ranks': "the rank's own gradient is left as",
    'skips_parameters_without_gradients': "the rank's own gradient is left as",
    'averages_within_a_group': "the rank's own gradient is left as",
    'leaves_the_weights_alone': "the rank's own gradient is left as",
}


def _no_ddp(module, *args, **kwargs):
    return module


torch.nn.parallel.DistributedDataParallel = _no_ddp
torch.nn.parallel.distributed.DistributedDataParallel = _no_ddp


def average_gradients(model, group=None):
    return None
