"""Bug: skips every parameter of a module that is in eval mode ('frozen'), even though its parameters have
gradients."""
EXPECT_FAIL = {"averages_generated_models": "not the mean over the ranks"}
import torch.distributed as dist


def average_gradients(model, group=None):
    size = dist.get_world_size(group)
    for module in model.modules():
        if not module.training:
            continue
        for p in module.parameters(recurse=False):
            if p.grad is not None:
                dist.all_reduce(p.grad, group=group)
                p.grad.div_(size)
