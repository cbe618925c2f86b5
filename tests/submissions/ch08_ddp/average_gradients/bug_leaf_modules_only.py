"""Bug: averages the parameters of the leaf modules only (modules without children): a parameter registered on a
module that also has children (e.g. on the root model) is skipped."""
EXPECT_FAIL = {"averages_generated_models": "the gradient of"}
import torch.distributed as dist


def average_gradients(model, group=None):
    size = dist.get_world_size(group)
    for module in model.modules():
        if any(True for _ in module.children()):
            continue
        for p in module.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad, group=group)
                p.grad.div_(size)
