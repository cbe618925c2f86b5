"""Bug: walks the model's direct children and their own parameters only, so parameters nested one level deeper
(a block inside a block) keep this rank's own gradient."""
import torch.distributed as dist

EXPECT_FAIL = {'averages_generated_models': 'is not the mean over the ranks'}


def average_gradients(model, group=None):
    size = dist.get_world_size(group)
    modules = [model, *model.children()]
    for module in modules:
        for p in module.parameters(recurse=False):
            if p.grad is not None:
                dist.all_reduce(p.grad, group=group)
                p.grad /= size
