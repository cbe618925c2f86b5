"""Bug (second call): a module-level flag meant to 'initialise once' makes every call after the first do nothing, so from the second training step on no gradient is averaged. (from an independent red team)."""
EXPECT_FAIL = {
    'averages_on_two_ranks': "the rank's own gradient is left as",
    'averages_within_a_group': 'waited in a collective for rank',
}

import torch
import torch.distributed as dist

_done = False


def average_gradients(model, group=None):
    global _done
    if _done:
        return
    _done = True
    n = dist.get_world_size(group)
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad, group=group)
                p.grad /= n
