"""Scenarios used only by tests/test_ranks.py to prove :mod:`graders.ranks` (no exercise uses them).

They live in the graders package because a runner imports a scenario by name, and only from there.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from graders.isolation import RunnerStudent, StudentRaised
from graders.ranks import RankContext


def call_on_rank(student: RunnerStudent, rank: RankContext, name: str, value: float, size: int = 4) -> dict:
    """Call the student's ``name(t)`` with ``t`` full of ``value`` on this rank's device; report what came back."""
    t = torch.full((size,), float(value), device=rank.device)
    out = student.call(name, t)
    return {"rank": rank.rank, "group_rank": dist.get_rank(), "world_size": dist.get_world_size(),
            "backend": dist.get_backend(), "device": rank.device, "pid": _pid(), "t": t.cpu(),
            "out": out.cpu() if isinstance(out, torch.Tensor) else out, "forked_from_the_forkserver": _forked(),
            "env": {name: os.environ.get(name) for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}}


def call_then_observe(student: RunnerStudent, rank: RankContext, name: str, value: float, second: str) -> dict:
    """``call_on_rank`` with ``name``, then the student's ``second(t)``, whose error is observed (not raised)."""
    result = call_on_rank(student, rank, name, value)
    try:
        student.call(second, torch.ones(4, device=rank.device))
        result["second"] = "returned"
    except StudentRaised as exc:
        result["second"] = exc.error.exception_message
    return result


def grader_collective_then_call(student: RunnerStudent, rank: RankContext, name: str, value: float) -> dict:
    """The grader's own collective (a broadcast, as DDP's constructor makes), then the student's call."""
    t = torch.full((2,), float(value) + rank.rank, device=rank.device)
    dist.broadcast(t, src=0)
    return call_on_rank(student, rank, name, value)


def environment(student: RunnerStudent, rank: RankContext) -> dict:
    """What a rank's process sees: its environment, and the seed it was given."""
    import os

    return {"debug": os.environ.get("TORCH_DISTRIBUTED_DEBUG"), "rank_env": os.environ.get("RANK"),
            "seed": torch.initial_seed(), "pid": _pid(), "pgid": os.getpgid(0),
            "forked_from_the_forkserver": _forked()}


def broken_scenario(student: RunnerStudent, rank: RankContext) -> None:
    """A grader bug on rank 1 (the other rank is fine)."""
    if rank.rank == 1:
        raise KeyError("a grader bug")


def _forked() -> bool:
    """True in a runner forked from the forkserver (which preloaded graders._preload), False under spawn."""
    import sys

    return "graders._preload" in sys.modules


def _pid() -> int:
    import os

    return os.getpid()


def fails_check(student: RunnerStudent, rank: RankContext) -> None:
    """The scenario fails the check on every rank (as a type check would)."""
    from graders.outcomes import fail

    fail("average must return a tensor")


def ddp_gradients(student: RunnerStudent, rank: RankContext, case, batch) -> dict:
    """average_gradients' model, one batch and loss on this rank, through DistributedDataParallel: its gradients."""
    from torch.nn.parallel import DistributedDataParallel

    from graders.ch08_ddp.average_gradients import build_model, rank_loss
    from graders.ranks import ddp_group

    model = build_model(case, rank.rank).to(rank.device)
    ddp_model = DistributedDataParallel(model, process_group=ddp_group(rank.backend),
                                        find_unused_parameters=case.model == "partly_used")
    inputs, targets = batch
    rank_loss(ddp_model(inputs.to(rank.device)), targets.to(rank.device), rank.rank).backward()
    return {name: None if p.grad is None else p.grad.cpu() for name, p in model.named_parameters()}
