"""Bug: recognises the last micro-batch by identity (mb is micro_batches[-1]): when the list repeats one (inputs, targets) object, every backward runs outside no_sync and each bucket is all-reduced several times per call."""
from __future__ import annotations
EXPECT_FAIL = {"all_reduces_once_per_call": "outside ddp_model.no_sync()"}

import contextlib
import math
from collections.abc import Sequence
from typing import Any, Callable

import torch
import torch.distributed as dist


def shard_indices(num_samples: int, rank: int, world_size: int, *, shuffle: bool = True, seed: int = 0,
                  epoch: int = 0, drop_last: bool = False) -> list[int]:
    """The indices ``DistributedSampler`` gives ``rank`` of ``world_size`` in ``epoch``, without using it."""
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must satisfy 0 <= rank < world_size, got rank={rank}, world_size={world_size}")
    if drop_last and num_samples % world_size != 0:
        per_rank = num_samples // world_size  # the tail that does not fill a round is dropped
    else:
        per_rank = math.ceil(num_samples / world_size)  # the last round is padded from the start
    total = per_rank * world_size
    if shuffle:
        # A generator of its own, seeded with seed + epoch: the global RNG is neither used nor changed.
        generator = torch.Generator()
        generator.manual_seed(seed + epoch)
        order = torch.randperm(num_samples, generator=generator).tolist()
    else:
        order = list(range(num_samples))
    if total > len(order) and order:
        # Padding repeats the order from its start, as many times as needed (more ranks than samples).
        order = (order * math.ceil(total / len(order)))[:total]
    else:
        order = order[:total]
    return order[rank:total:world_size]


def average_gradients(model: torch.nn.Module, group: Any = None) -> None:
    """Replace every existing gradient by its mean over the ranks of ``group`` (all ranks when None)."""
    size = dist.get_world_size(group)
    for parameter in model.parameters():
        if parameter.grad is None:  # no gradient on any rank (the caller guarantees the same ones everywhere)
            continue
        dist.all_reduce(parameter.grad, op=dist.ReduceOp.SUM, group=group)
        parameter.grad.div_(size)


def ddp_accumulation_step(ddp_model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                          loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                          micro_batches: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> float:
    """One optimizer step over this rank's micro-batches, with one gradient all-reduce (on the last backward)."""
    if len(micro_batches) == 0:
        raise ValueError("micro_batches is empty: one optimizer step needs at least one micro-batch")
    optimizer.zero_grad(set_to_none=True)
    count = len(micro_batches)
    total = 0.0
    final = micro_batches[-1]
    for batch in micro_batches:
        inputs, targets = batch
        last = batch is final
        # DDP decides at forward time whether the coming backward all-reduces: the forward must be inside too.
        with contextlib.nullcontext() if last else ddp_model.no_sync():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / count).backward()
        total += loss.item()
    optimizer.step()
    return total / count
