"""Bug (a side effect): averages correctly, then destroys the default process group, so the caller's training cannot run another collective (the next average_gradients, a barrier, DDP). (from an independent red team)."""
EXPECT_FAIL = {
    'averages_on_two_ranks': 'the process group was gone after average_gradients returned',
    'averages_on_three_ranks': 'the process group was gone after average_gradients returned',
    'skips_parameters_without_gradients': 'the process group was gone after average_gradients returned',
    'averages_within_a_group': 'waited in a collective for rank',
    'leaves_the_weights_alone': 'the process group was gone after average_gradients returned',
}

import torch
import torch.distributed as dist


def average_gradients(model, group=None):
    n = dist.get_world_size(group)
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad, group=group)
                p.grad /= n
    dist.destroy_process_group()
