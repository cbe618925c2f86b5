"""average_gradients(model, group=None): every gradient becomes its mean over the group's ranks, as DDP's.

Each check runs a real process group (gloo on CPU; NCCL with a GPU per rank) through
:func:`graders.ranks.run_on_ranks`. On every rank a scenario builds the same model from a :class:`GradCase`
(optionally with weights that differ per rank), runs forward and backward on that rank's own batch, calls
the student's ``average_gradients`` (only on the ranks of the group), and reports every gradient, parameter
and buffer as observations.

The judge builds the same model for every rank in its own process, computes each rank's local gradients
itself, and expects their mean over the group: that is what ``DistributedDataParallel`` produces
(tests/test_average_gradients.py proves it on real ranks). A wrong gradient is compared with what common
mistakes give (the sum, the mean divided again, the default group's size instead of the group's, the
rank's own gradient left alone) and the one mistake that matches is named.

A rank that waits in a collective the other ranks never call (a reduction on rank 0 only, a group
ignored) fails within seconds, with the ranks' stories (graders/ranks.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from graders.compare import difference, dtype_name, show
from graders.isolation import RunnerStudent
from graders.outcomes import StudentCodeError, fail, fail_mismatch
from graders.ranks import RankContext
from graders.registry import exercise, judge_only
from graders.student import Submission

AVERAGE_GRADIENTS = exercise("average_gradients", chapter="08_ddp", names=["average_gradients"])

RTOL, ATOL = 1e-5, 1e-7  # the specification's tolerance


@dataclasses.dataclass(frozen=True)
class GradCase:
    world_size: int
    model: str = "mlp"  # "mlp", "conv" (float64) or "partly_used" (a frozen layer and an unused one)
    # One entry per call, in order: the ranks of a new group, or None (the default group; no group passed).
    # Before each call every rank runs a new backward on a batch of its own.
    calls: tuple[tuple[int, ...] | None, ...] = (None,)
    weights_differ: bool = False  # each rank's weights are moved by its own amount (and a BatchNorm has buffers)
    seed: int = 5

    def members(self, call: int) -> list[int]:
        group = self.calls[call]
        return list(group) if group is not None else list(range(self.world_size))

    @property
    def summary(self) -> str:
        """The whole run, for an error that may have happened in any call."""
        if len(self.calls) == 1:
            return f"{self.call_text(0)} ({self.given(0)})"
        groups = ", ".join("all ranks" if g is None else f"new_group({list(g)})" for g in self.calls)
        return (f"average_gradients, {len(self.calls)} calls ({self.world_size} ranks, each with its own batch before "
                f"each call; groups: {groups}; model: {self.model})")

    def call_text(self, call: int) -> str:
        return "average_gradients(model)" if self.calls[call] is None else "average_gradients(model, group)"

    def given(self, call: int) -> str:
        ranks = f"{self.world_size} ranks"
        group = self.calls[call]
        if group is not None:
            ranks += f", group = dist.new_group({list(group)}) (only ranks {group} call average_gradients)"
        which = f"call {call + 1} of {len(self.calls)}; " if len(self.calls) > 1 else ""
        weights = "; the ranks' weights differ" if self.weights_differ else ""
        return (f"{ranks}, each with its own batch; {which}after backward(), {self.call_text(call)}{weights} "
                f"(model: {self.model})")


class PartlyUsed(nn.Module):
    """A frozen layer (requires_grad=False) and a layer forward never uses: neither gets a gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.frozen = nn.Linear(5, 8)
        self.frozen.requires_grad_(False)
        self.used = nn.Linear(8, 3)
        self.unused = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.used(torch.relu(self.frozen(x)))


def build_model(case: GradCase, rank: int) -> nn.Module:
    """The same model on every rank (weights from ``case.seed``; moved per rank when ``weights_differ``)."""
    with torch.random.fork_rng(devices=[]):  # the global RNG seeds the layers; the caller's stays as it was
        torch.manual_seed(case.seed)
        return _moved(case, _layers(case), rank)


def _layers(case: GradCase) -> nn.Module:
    if case.model == "conv":
        model: nn.Module = nn.Sequential(nn.Conv1d(2, 4, 3), nn.Tanh(), nn.Flatten(), nn.Linear(16, 3)).double()
    elif case.model == "partly_used":
        model = PartlyUsed()
    elif case.weights_differ:
        model = nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 3))
    else:
        model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    return model


def _moved(case: GradCase, model: nn.Module, rank: int) -> nn.Module:
    if case.weights_differ:
        shift = torch.Generator().manual_seed(100 + rank)
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(0.3 * torch.randn(parameter.shape, generator=shift, dtype=parameter.dtype))
    return model


@judge_only
def rank_batches(case: GradCase, rank: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Rank ``rank``'s batch for each call, made in the judge: each rank receives its own batches only, so no
    rank can work out another's gradients without communicating."""
    data = torch.Generator().manual_seed(1000 * case.seed + rank)
    dtype = torch.float64 if case.model == "conv" else torch.float32
    shape = (6, 2, 6) if case.model == "conv" else (6, 5)
    return [(torch.randn(shape, generator=data, dtype=dtype), torch.randn(6, 3, generator=data, dtype=dtype))
            for _ in case.calls]


def rank_loss(outputs: torch.Tensor, targets: torch.Tensor, rank: int) -> torch.Tensor:
    return ((outputs - targets) ** 2).mean() * (1 + rank)  # another scale per rank: the mean is not any one


def local_backward(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor], rank: int) -> None:
    """A fresh backward of this rank's batch: gradients set to None first, then local ones."""
    device = next(model.parameters()).device
    model.zero_grad(set_to_none=True)
    inputs, targets = batch
    rank_loss(model(inputs.to(device)), targets.to(device), rank).backward()


def _cpu_state(model: nn.Module) -> dict[str, Any]:
    return {"grads": {n: None if p.grad is None else p.grad.detach().cpu().clone() for n, p in model.named_parameters()},
            "params": {n: p.detach().cpu().clone() for n, p in model.named_parameters()},
            "buffers": {n: b.detach().cpu().clone() for n, b in model.named_buffers()}}


# ==================================================================================================
# On each rank
# ==================================================================================================
def backward_then_average(student: RunnerStudent, rank: RankContext, case: GradCase,
                          batches: list[tuple[torch.Tensor, torch.Tensor]]) -> list[dict[str, Any]]:
    """For each call: a local backward, then the student's average_gradients on the group's ranks; report
    every tensor after it (and whether the process group still works)."""
    # Every rank creates every group, in the same order (new_group is a collective of the default group).
    groups = [dist.new_group(list(group)) if group is not None else None for group in case.calls]
    model = build_model(case, rank.rank).to(rank.device)
    function = student.get("average_gradients")
    observed = []
    for call, group in enumerate(groups):
        local_backward(model, batches[call], rank.rank)
        if rank.rank in case.members(call):
            if group is None:
                student.run(function, model)
            else:
                student.run(function, model, group)
        observed.append({**_cpu_state(model), "group_alive": dist.is_initialized()})
        if not dist.is_initialized():
            break
    return observed


# ==================================================================================================
# In the judge
# ==================================================================================================
@judge_only
def local_states(case: GradCase) -> list[list[dict[str, Any]]]:
    """[rank][call]: every rank's model after that call's own backward (before any averaging), computed here."""
    states = []
    for rank in range(case.world_size):
        model = build_model(case, rank)
        calls = []
        for batch in rank_batches(case, rank):
            local_backward(model, batch, rank)
            calls.append(_cpu_state(model))
        states.append(calls)
    return states


def _mean(states: list[list[dict[str, Any]]], call: int, members: list[int], name: str) -> torch.Tensor:
    return torch.stack([states[r][call]["grads"][name].double() for r in members]).mean(0)


def _mistakes(case: GradCase, states: list[list[dict[str, Any]]], call: int, rank: int,
              name: str) -> list[tuple[str, torch.Tensor]]:
    members = case.members(call)
    total = torch.stack([states[r][call]["grads"][name].double() for r in members]).sum(0)
    size = len(members)
    mistakes = [
        ("the gradients were summed but not divided by the number of ranks (all_reduce sums; divide by "
         "dist.get_world_size(group) afterwards)", total),
        ("divided twice: the mean was divided by the number of ranks again", total / size ** 2),
        ("the rank's own gradient is left as it was: nothing was averaged into it on this rank",
         states[rank][call]["grads"][name].double()),
    ]
    if size != case.world_size:
        mistakes.append((f"divided by the default group's size ({case.world_size}) instead of the group's "
                         f"({size}): use dist.get_world_size(group)", total / case.world_size))
    for earlier in range(call):
        if len(case.members(earlier)) != size:
            mistakes.append((f"divided by {len(case.members(earlier))} (an earlier call's group size, or a fixed "
                             f"number?) instead of {size}, the size of this call's group: ask "
                             f"dist.get_world_size(group) at every call", total / len(case.members(earlier))))
    return mistakes


def _holds_the_mean(case: GradCase, states: list[list[dict[str, Any]]], call: int, seen: dict[str, Any]) -> bool:
    members = case.members(call)
    return all(seen["grads"][name] is not None
               and torch.allclose(seen["grads"][name].double(), _mean(states, call, members, name), rtol=RTOL, atol=ATOL)
               for name, local in states[members[0]][call]["grads"].items() if local is not None)


def _cause(case: GradCase, states: list[list[dict[str, Any]]], observed: list[list[dict[str, Any]]], call: int,
           rank: int, name: str, got: torch.Tensor) -> str | None:
    """The mistake whose gradient this rank holds; else, when the group's first rank holds the mean, that
    only it got the result."""
    expected = _mean(states, call, case.members(call), name)
    matching = {cause for cause, value in _mistakes(case, states, call, rank, name)
                if not torch.allclose(value, expected, rtol=RTOL, atol=ATOL)
                and torch.allclose(got.double(), value, rtol=RTOL, atol=ATOL)}
    if matching:
        return matching.pop() if len(matching) == 1 else None
    first = case.members(call)[0]
    if rank != first and len(observed[first]) > call and _holds_the_mean(case, states, call, observed[first][call]):
        return (f"only rank {first} holds the mean: dist.reduce(..., dst={first}) (or a reduction whose result only "
                f"one rank keeps) leaves the other ranks without it; all_reduce gives the result to every rank")
    return None


def _run(student: Submission, case: GradCase, device: Any) -> list[list[dict[str, Any]]]:
    # A rank of a group waiting for a member that returned is not unblocked by the end-of-run collective (that
    # runs on the default group): only the collective timeout ends it. These collectives take milliseconds.
    timeout = 3.0 if any(group is not None for group in case.calls) else 5.0
    args = [(case, rank_batches(case, r)) for r in range(case.world_size)]
    run = student.on_ranks(backward_then_average, case.world_size, args, device=device, collective_timeout=timeout)
    return run.values()


def _expect_average(student: Submission, case: GradCase, device: Any, *, skipped_hint: bool = False) -> None:
    states = local_states(case)  # expected values first, before any student code runs
    try:
        observed = _run(student, case, device)
    except StudentCodeError as exc:
        message = exc.error.exception_message
        if skipped_hint and exc.error.exception_type in ("AttributeError", "TypeError") and "NoneType" in message:
            fail(f"{case.summary} raised on a model with parameters that have no gradient: "
                 f"{exc.error.describe()}\n  likely cause: a parameter without a gradient (p.grad is None: frozen, "
                 f"or unused by forward) must be skipped")
        raise exc.within(case.summary) from None
    for call in range(len(case.calls)):
        for rank in range(case.world_size):
            _expect_call(case, states, observed, call, rank)


def _expect_call(case: GradCase, states: list[list[dict[str, Any]]], observed: list[list[dict[str, Any]]], call: int,
                 rank: int) -> None:
    given, members, local_state = case.given(call), case.members(call), states[rank][call]
    where = f"rank {rank} of {case.world_size}" + (f", after call {call + 1}" if len(case.calls) > 1 else "")
    if call >= len(observed[rank]):  # the rank stopped after an earlier call had already failed the check
        fail(f"on {where}, no result: an earlier call left this rank without a process group ({given})")
    seen = observed[rank][call]
    if not seen["group_alive"]:
        fail(f"on {where}, the process group was gone after average_gradients returned ({given}): it must "
             f"leave the group as it found it (no destroy_process_group()): training goes on communicating")
    for kind in ("params", "buffers"):
        for name, before in local_state[kind].items():
            after = seen[kind][name]
            # Parameters come back exactly; buffers were updated by forward on this rank's device.
            same = (torch.equal(after, before) if kind == "params" else
                    torch.allclose(after, before, rtol=RTOL, atol=ATOL))
            if same:
                continue
            noun = "parameter" if kind == "params" else "buffer"
            members_mean = torch.stack([states[r][call][kind][name].double() for r in members]).mean(0)
            averaged = (not torch.allclose(before.double(), members_mean, rtol=RTOL, atol=ATOL)
                        and torch.allclose(after.double(), members_mean, rtol=RTOL, atol=ATOL))
            fail(f"on {where}, the {noun} {name!r} changed: average_gradients must change the gradients "
                 f"only, never the weights or buffers ({given}); {difference(after, before)}"
                 + (f"\n  likely cause: the {noun}s (or the whole state_dict) were averaged over the ranks; only "
                    f"the gradients (p.grad) are" if averaged else ""))
    for name, local in local_state["grads"].items():
        got = seen["grads"][name]
        if local is None:
            if got is not None:
                fail(f"on {where}, parameter {name!r} had no gradient (its .grad was None) and afterwards holds "
                     f"{show(got)}; parameters without a gradient must be skipped, their .grad left None ({given})")
            continue
        if got is None:
            fail(f"on {where}, the gradient of {name!r} was removed (its .grad is None afterwards); it must "
                 f"hold the mean over the ranks ({given})")
        if got.dtype != local.dtype or got.shape != local.shape:
            fail(f"on {where}, the gradient of {name!r} is a {dtype_name(got.dtype)} tensor of shape "
                 f"{tuple(got.shape)}; it was {dtype_name(local.dtype)} of shape {tuple(local.shape)}")
        expected = _mean(states, call, members, name) if rank in members else local.double()
        if not torch.allclose(got.double(), expected, rtol=RTOL, atol=ATOL):
            what = (f"on {where}, the gradient of {name!r} is not the mean over the ranks {members}"
                    if rank in members else
                    f"on {where}, which is not in the group and does not call average_gradients, the "
                    f"gradient of {name!r} changed")
            fail_mismatch(what, given=given, expected=show(expected.to(local.dtype), 6), got=show(got, 6),
                          where=difference(got, expected, rtol=RTOL, atol=ATOL),
                          cause=_cause(case, states, observed, call, rank, name, got) if rank in members else None)


@AVERAGE_GRADIENTS.check(points=2)
def averages_on_two_ranks(student: Submission, device: Any) -> None:
    """On 2 ranks, every gradient becomes the mean of the two ranks' gradients (on both ranks), call after call."""
    _expect_average(student, GradCase(world_size=2, calls=(None, None)), device)


@AVERAGE_GRADIENTS.check(points=1)
def averages_on_three_ranks(student: Submission, device: Any) -> None:
    """On 3 ranks, a float64 model: the mean over 3, on every rank."""
    _expect_average(student, GradCase(world_size=3, model="conv", seed=8), device)


@AVERAGE_GRADIENTS.check(points=1)
def skips_parameters_without_gradients(student: Submission, device: Any) -> None:
    """Parameters whose .grad is None (frozen, or unused by forward) are skipped and stay None."""
    _expect_average(student, GradCase(world_size=2, model="partly_used", seed=3), device, skipped_hint=True)


@AVERAGE_GRADIENTS.check(points=2)
def averages_within_a_group(student: Submission, device: Any) -> None:
    """Groups of 3 ranks, one call each: [1, 2] (without rank 0), [0, 2], then all: the mean over the group only."""
    _expect_average(student, GradCase(world_size=3, calls=((1, 2), (0, 2), None), seed=6), device)


@AVERAGE_GRADIENTS.check(points=1)
def leaves_the_weights_alone(student: Submission, device: Any) -> None:
    """Only gradients change: with weights that differ per rank, parameters and buffers stay as they were."""
    _expect_average(student, GradCase(world_size=2, weights_differ=True, seed=9), device)
