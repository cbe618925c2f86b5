"""Bug: all_gathers into a list sized by the global world size even when a group is given, so the sub-group's all_gather gets a list of the wrong length."""
import torch
import torch.distributed as dist

EXPECT_FAIL = {
    'averages_within_a_group': 'waited in a collective for rank',
}


def average_gradients(model, group=None):
    world = dist.get_world_size()
    for p in model.parameters():
        if p.grad is None:
            continue
        gathered = [torch.zeros_like(p.grad) for _ in range(world)]
        dist.all_gather(gathered, p.grad, group=group)
        p.grad.copy_(sum(gathered) / world)
