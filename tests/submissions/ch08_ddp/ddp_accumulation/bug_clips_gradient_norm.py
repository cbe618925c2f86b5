"""Bug: clips the accumulated gradient's norm to 1 before the step, which the specification never asks for: with
gradient norms below 1 it changes nothing, with larger ones the step is not that of the mean loss."""
import contextlib

import torch

EXPECT_FAIL = {'matches_on_generated_cases': "generated cases failed; the smallest of them"}


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    if not micro_batches:
        raise ValueError("no micro-batches")
    optimizer.zero_grad(set_to_none=True)
    count = len(micro_batches)
    total = 0.0
    for index, (inputs, targets) in enumerate(micro_batches):
        with contextlib.nullcontext() if index == count - 1 else ddp_model.no_sync():
            loss = loss_fn(ddp_model(inputs), targets)
            (loss / count).backward()
        total += loss.item()
    torch.nn.utils.clip_grad_norm_(ddp_model.parameters(), 1.0)
    optimizer.step()
    return total / count
