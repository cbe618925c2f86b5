"""Correct: flattens the gradients into one buffer per (dtype, device), all_reduces each buffer once, divides, and copies the pieces back."""
from collections import defaultdict

import torch
import torch.distributed as dist
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

EXPECT_PASS = True


def average_gradients(model, group=None):
    size = dist.get_world_size(group)
    buckets = defaultdict(list)
    for p in model.parameters():
        if p.grad is not None:
            buckets[(p.grad.dtype, p.grad.device)].append(p.grad)
    for grads in buckets.values():
        flat = _flatten_dense_tensors(grads)
        dist.all_reduce(flat, group=group)
        flat.div_(size)
        for grad, reduced in zip(grads, _unflatten_dense_tensors(flat, grads)):
            grad.copy_(reduced)
