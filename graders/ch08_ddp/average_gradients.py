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

``averages_generated_models`` draws models from the specification's whole domain (:func:`generate_model_case`:
nested and tied parameters, frozen ones that keep a .grad, mixed dtypes, groups of every size passed every
way), runs them all in one run of 3 ranks, and names the smallest failing model; a cause only when one
catalogued mistake gives every rank's gradients after every model.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from graders import domain
from graders.compare import difference, dtype_name, show
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
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
# The generated domain (from the specification's sentences): any model (parameters nested one or more levels
# deep, in ModuleLists, empty ones, modules with parameters of their own and submodules, some in eval mode,
# float32 and float64 side by side, channels_last and transposed layouts, a parameter tied to two places, buffers,
# weights and buffers that differ per rank), any subset of parameters with a gradient (unused ones, frozen ones,
# a frozen one that still holds a .grad: "every parameter that has a gradient"), gradients of any magnitude
# (1e-6 to 1e6, zeros), any group (the default one, a new group of one rank, of some, of all, dist.group.WORLD;
# passed by position or keyword), call after call with another group each time, on 3 ranks.
# ==================================================================================================
@dataclasses.dataclass(frozen=True)
class Entry:
    path: str  # where the parameter lives: "blocks.0.inner.weight"
    shape: tuple[int, ...]
    dtype: str  # "float32" or "float64"
    state: str  # "grad", "unused" (requires_grad, no .grad), "frozen" (no .grad), "frozen_grad" (a .grad kept)
    alias: str | None = None  # the same Parameter as this earlier entry (tied weights)
    # the parameter's and its gradient's memory layout: "contiguous", "channels_last" (4-d, as a conv's weight in
    # channels_last) or "transposed" (2-d): a .contiguous() copy all-reduced is not the gradient itself
    layout: str = "contiguous"

    @property
    def has_grad(self) -> bool:
        return self.state in ("grad", "frozen_grad")

    @property
    def numel(self) -> int:
        count = 1
        for size in self.shape:
            count *= size
        return count


@dataclasses.dataclass(frozen=True)
class ModelCase:
    """One call of average_gradients on a generated model, after each rank set its own gradients."""
    entries: tuple[Entry, ...]
    buffers: tuple[tuple[str, tuple[int, ...]], ...]
    group: str  # "default" (no group argument), "none" (group=None given), "world" (dist.group.WORLD), "new"
    members: tuple[int, ...]  # the ranks of the group (all of them for default, none and world)
    style: str  # "positional" or "keyword": how the group is passed
    magnitude: int  # the gradients are about 10 ** magnitude
    seed: int
    differ: bool = False  # each rank's weights and buffers are moved by its own amount
    eval_modules: tuple[str, ...] = ()  # submodules put in eval mode (a frozen BatchNorm's): their gradients count

    @property
    def size(self) -> tuple[int, ...]:
        return (len(self.entries), sum(e.numel for e in self.entries), abs(self.magnitude))

    def call(self, world_size: int) -> str:
        if self.group == "default":
            text = "average_gradients(model)"
        else:
            value = {"none": "None", "world": "dist.group.WORLD", "new": f"dist.new_group({list(self.members)})"}
            text = (f"average_gradients(model, group={value[self.group]})" if self.style == "keyword" else
                    f"average_gradients(model, {value[self.group]})")
        params = ", ".join(f"{e.path} {list(e.shape)} {e.dtype}"
                           + {"contiguous": "", "channels_last": " channels_last", "transposed": " (transposed layout)"
                              }[e.layout]
                           + {"grad": "", "unused": " (no .grad: unused)", "frozen": " (frozen, no .grad)",
                              "frozen_grad": " (requires_grad=False, but holds a .grad)"}[e.state]
                           + (f" (the same Parameter as {e.alias})" if e.alias else "") for e in self.entries)
        weights = "; the ranks' weights and buffers differ" if self.differ else ""
        weights += f"; in eval mode: {', '.join(self.eval_modules)}" if self.eval_modules else ""
        return (f"{text} on {world_size} ranks (only ranks {list(self.members)} call it), each with gradients of its "
                f"own of about 1e{self.magnitude}{weights}; model parameters: {params}")


def generate_model_case(generator: random.Random, world_size: int) -> ModelCase:
    entries: list[Entry] = []
    count = domain.small_int(generator, 1, 5)
    for index in range(count):
        depth = domain.small_int(generator, 0, 3)
        parts = [domain.pick(generator, ["block", "inner", "layers", "head"]) + str(index)]
        for level in range(depth):  # a digit is an element of the ModuleList above it
            parts.append(str(generator.randint(0, 2)) if parts[-1].startswith("layers") else
                         domain.pick(generator, [f"sub{level}", f"layers{level}"]))
        path = ".".join(parts + [domain.pick(generator, ["weight", "bias", "scale"])])
        if entries and generator.random() < 0.3:  # a module with parameters of its own AND submodules
            owner = generator.choice(entries).path.split(".")
            if len(owner) > 2:
                path = ".".join(owner[:generator.randint(1, len(owner) - 2)] + [f"own{index}"])
        # (0-d parameters are left out: a correct fixture divides by a 1-element tensor, which a 0-d .grad refuses)
        shape = domain.pick(generator, [(1,), (domain.small_int(generator, 1, 6),),
                                        (generator.randint(1, 4), generator.randint(1, 5)), (0,), (2, 3, 2, 2)],
                            weights=[2, 4, 4, 1, 1])
        state = domain.pick(generator, ["grad", "unused", "frozen", "frozen_grad"], weights=[6, 1, 1, 1])
        layout = "contiguous"
        if len(shape) == 4 and generator.random() < 0.6:
            layout = "channels_last"
        elif len(shape) == 2 and min(shape) > 1 and generator.random() < 0.3:
            layout = "transposed"
        entries.append(Entry(path, shape, domain.pick(generator, ["float32", "float64"], weights=[3, 1]), state,
                             layout=layout))
    if entries and generator.random() < 0.25:  # a tied parameter: the same Parameter reached twice
        first = generator.choice(entries)
        entries.append(dataclasses.replace(first, path=f"tied{len(entries)}.{first.path}", alias=first.path))
    buffers = tuple((f"stats{i}.running", (generator.randint(1, 4),)) for i in range(domain.small_int(generator, 0, 2)))
    group = domain.pick(generator, ["default", "none", "world", "new"], weights=[2, 1, 1, 4])
    if group == "new":
        size = domain.small_int(generator, 1, world_size)
        members = tuple(sorted(generator.sample(range(world_size), size)))
    else:
        members = tuple(range(world_size))
    modules = sorted({".".join(e.path.split(".")[:depth]) for e in entries
                      for depth in range(1, len(e.path.split(".")))})
    eval_modules = (tuple(sorted(generator.sample(modules, generator.randint(1, len(modules)))))
                    if modules and generator.random() < 0.2 else ())
    case = ModelCase(tuple(entries), buffers, group, members, domain.pick(generator, ["positional", "keyword"]),
                     domain.pick(generator, [0, 0, -6, -3, 3, 6]), generator.randint(0, 10**6),
                     generator.random() < 0.4, eval_modules)
    # The entries in named_parameters() order, which the observations follow: a module's own parameters come
    # before its submodules' ones, so one added to a module that already has submodules moves up
    names = [name for name, _ in build_generated(case, 0).named_parameters(remove_duplicate=False)]
    return dataclasses.replace(case, entries=tuple(sorted(entries, key=lambda e: names.index(e.path))))


def _all_groups(world_size: int) -> list[tuple[int, ...]]:
    """Every non-empty subset of the ranks, in one order (new_group is a collective: each rank makes all)."""
    return [tuple(r for r in range(world_size) if mask >> r & 1) for mask in range(1, 2 ** world_size)]


def _child(module: nn.Module, name: str) -> nn.Module:
    """The submodule ``name`` of ``module``, made when missing (a ModuleList for "layers…", grown to a digit)."""
    if name.isdigit():
        while len(module) <= int(name):
            module.append(nn.Module())
        return module[int(name)]
    if name not in module._modules:
        module.add_module(name, nn.ModuleList() if name.startswith("layers") else nn.Module())
    return module._modules[name]


def _submodule(model: nn.Module, path: str) -> nn.Module:
    module = model
    for name in path.split(".") if path else ():
        module = module[int(name)] if name.isdigit() else module._modules[name]
    return module


def _find(model: nn.Module, path: str) -> nn.Parameter:
    parent, _, leaf = path.rpartition(".")
    return _submodule(model, parent)._parameters[leaf]


def _laid_out(tensor: torch.Tensor, layout: str) -> torch.Tensor:
    """``tensor``'s values in the memory layout ``layout`` (see Entry.layout)."""
    if layout == "channels_last":
        return tensor.contiguous(memory_format=torch.channels_last)
    if layout == "transposed":
        return tensor.t().contiguous().t()
    return tensor


def build_generated(case: ModelCase, rank: int) -> nn.Module:
    """The case's model (the same weights on every rank unless ``case.differ``; no gradients yet)."""
    root = nn.Module()
    values = torch.Generator().manual_seed(case.seed)
    made: dict[str, nn.Parameter] = {}
    for entry in case.entries:
        *parents, leaf = entry.path.split(".")
        module = root
        for name in parents:
            module = _child(module, name)
        if entry.alias is not None:
            parameter = made[entry.alias]
        else:
            dtype = getattr(torch, entry.dtype)
            data = _laid_out(torch.randn(entry.shape, generator=values, dtype=torch.float64).to(dtype), entry.layout)
            parameter = nn.Parameter(data, requires_grad=entry.state in ("grad", "unused"))
        module.register_parameter(leaf, parameter)
        made[entry.path] = parameter
    for path, shape in case.buffers:
        parent, name = path.split(".")
        _child(root, parent).register_buffer(name, torch.randn(shape, generator=values))
    for name in case.eval_modules:
        _submodule(root, name).eval()
    if case.differ:
        shift = torch.Generator().manual_seed(case.seed + 7 * rank + 1)
        with torch.no_grad():
            for tensor in [*root.parameters(), *root.buffers()]:
                tensor.add_(torch.randn(tensor.shape, generator=shift, dtype=torch.float64).to(tensor.dtype))
    return root


def _gradient_entries(case: ModelCase) -> list[Entry]:
    return [e for e in case.entries if e.has_grad and e.alias is None]


@judge_only
def generated_gradients(cases: list[ModelCase], rank: int) -> torch.Tensor:
    """Rank ``rank``'s own gradients for every case, flat (float64, each rounded to its parameter's dtype),
    made in the judge: no rank can work out another's without communicating."""
    pieces = []
    for index, case in enumerate(cases):
        data = torch.Generator().manual_seed(case.seed * 31 + 1000 * rank + index)
        for entry in _gradient_entries(case):
            scale = 10.0 ** case.magnitude
            values = torch.randn(entry.numel, generator=data, dtype=torch.float64) * scale
            if entry.numel and rank == 0 and index % 5 == 0:
                values[0] = 0.0  # exact zeros as well
            pieces.append(values.to(getattr(torch, entry.dtype)).double())
    return torch.cat(pieces) if pieces else torch.zeros(0, dtype=torch.float64)


DTYPE_CODES = {torch.float32: 1, torch.float64: 2, torch.float16: 3, torch.bfloat16: 4}


def _flat_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter's gradient (float64, flat), its layout (dtype code, numel; -1 for None), every parameter and
    buffer (flat), in ``named_parameters`` order."""
    params = [p for _, p in model.named_parameters()]
    grads = [p.grad for p in params]
    layout = torch.tensor([[DTYPE_CODES.get(g.dtype, 0), g.numel()] if isinstance(g, torch.Tensor) else [-1, -1]
                           for g in grads], dtype=torch.int64).reshape(-1, 2)
    flat = [g.detach().double().cpu().reshape(-1) for g in grads if isinstance(g, torch.Tensor)]
    empty = torch.zeros(0, dtype=torch.float64)
    return {"grads": torch.cat(flat) if flat else empty, "layout": layout,
            "params": torch.cat([p.detach().double().cpu().reshape(-1) for p in params]) if params else empty,
            "buffers": torch.cat([b.detach().double().cpu().reshape(-1) for _, b in model.named_buffers()])
            if list(model.buffers()) else empty}


def average_generated(student: RunnerStudent, rank: RankContext, cases: list[ModelCase],
                      gradients: torch.Tensor) -> dict[str, Any]:
    """For each case: build its model, give it this rank's gradients, call the student's average_gradients on
    the group's ranks (by position, keyword or without a group), and report the state after it."""
    groups = {members: dist.new_group(list(members)) for members in _all_groups(rank.world_size)}
    function = student.get("average_gradients")
    start, observed = 0, []
    for index, case in enumerate(cases):
        model = build_generated(case, rank.rank).to(rank.device)
        for entry in _gradient_entries(case):
            chunk = gradients[start:start + entry.numel]
            start += entry.numel
            parameter = _find(model, entry.path)
            parameter.grad = _laid_out(chunk.to(parameter.dtype).reshape(entry.shape), entry.layout).to(rank.device)
        if rank.rank in case.members:
            group = {"default": None, "none": None, "world": dist.group.WORLD}.get(case.group)
            if case.group == "new":
                group = groups[case.members]
            try:
                if case.group == "default":
                    student.run(function, model)
                elif case.style == "keyword":
                    student.run(function, model, group=group)
                else:
                    student.run(function, model, group)
            except StudentRaised as exc:
                return {"cases": observed, "raised": dataclasses.asdict(exc.error), "at": index}
        observed.append(_flat_state(model))
        if not dist.is_initialized():
            return {"cases": observed, "raised": None, "at": index, "group_gone": True}
    return {"cases": observed, "raised": None, "at": None}



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


# ==================================================================================================
# Generated models: the judge's side
# ==================================================================================================
CHUNK = 10  # generated models per run of the ranks (each run has the per-request time limit)
GENERATED_WORLD = 3  # groups of 1, 2 and 3 ranks are drawn inside it (4 ranks cost too much on 2 cores)


@dataclasses.dataclass
class _Expected:
    own: list[list[list[torch.Tensor | None]]]  # [case][rank][entry]: that rank's own gradient (None: no .grad)
    params: list[list[torch.Tensor]]  # [case][rank]: every parameter, flat
    buffers: list[list[torch.Tensor]]


@judge_only
def _generated_expectation(cases: list[ModelCase], world_size: int,
                           gradients: list[torch.Tensor]) -> _Expected:
    own, params, buffers = [], [], []
    starts = [0] * world_size
    for case in cases:
        per_rank = []
        for rank in range(world_size):
            entries: list[torch.Tensor | None] = []
            for entry in case.entries:
                if entry.alias is not None:
                    continue
                if entry.has_grad:
                    entries.append(gradients[rank][starts[rank]:starts[rank] + entry.numel])
                    starts[rank] += entry.numel
                else:
                    entries.append(None)
            per_rank.append(entries)
        own.append(per_rank)
        states = [_flat_state(build_generated(case, rank)) for rank in range(world_size)]
        params.append([state["params"] for state in states])
        buffers.append([state["buffers"] for state in states])
    return _Expected(own, params, buffers)


@judge_only
def _predicted(case: ModelCase, own: list[list[torch.Tensor | None]], rank: int, mistake: str | None,
               world_size: int) -> list[torch.Tensor | None]:
    """Rank ``rank``'s gradients after the call: the specification's (``mistake`` None) or a mistake's."""
    members = list(case.members)
    entries = [e for e in case.entries if e.alias is None]
    result: list[torch.Tensor | None] = []
    for index, entry in enumerate(entries):
        mine = own[rank][index]
        if mine is None or rank not in members:
            result.append(mine)
            continue
        total = torch.stack([own[r][index] for r in members]).sum(0)
        size = len(members)
        value = {None: total / size, "sum": total, "twice": total / size ** 2, "own": mine,
                 "world_size": total / world_size,
                 "requires_grad": mine if entry.state == "frozen_grad" else total / size}[mistake]
        result.append(value.to(getattr(torch, entry.dtype)).double())
    return result


GENERATED_MISTAKES = {
    "sum": "the gradients were summed but not divided by the number of ranks (all_reduce sums; divide by "
           "dist.get_world_size(group) afterwards)",
    "twice": "divided twice: the mean was divided by the number of ranks again",
    "own": "nothing was averaged on this rank: its own gradient is left as it was",
    "world_size": "divided by the default group's size instead of the group's: use dist.get_world_size(group)",
    "requires_grad": "a parameter with requires_grad=False that still holds a .grad was skipped: every parameter "
                     "that has a gradient is averaged (test p.grad is None, not p.requires_grad)",
}


@judge_only
def _slack(case: ModelCase, own: list[list[torch.Tensor | None]], rank: int) -> list[torch.Tensor | None]:
    """Per gradient, the rounding a sum over the group in the parameter's dtype may add (in any order: DDP's own
    float32 sums round too), on top of the specification's tolerance: 2 * ranks * eps * mean |gradient|."""
    entries = [e for e in case.entries if e.alias is None]
    result: list[torch.Tensor | None] = []
    for index, entry in enumerate(entries):
        if own[rank][index] is None or rank not in case.members:
            result.append(None if own[rank][index] is None else torch.zeros_like(own[rank][index]))
            continue
        magnitude = torch.stack([own[r][index].abs() for r in case.members]).mean(0)
        result.append(2 * len(case.members) * torch.finfo(getattr(torch, entry.dtype)).eps * magnitude)
    return result


def _grads_match(got: torch.Tensor, want: list[torch.Tensor | None], layout: torch.Tensor,
                 slack: list[torch.Tensor | None]) -> bool:
    present = [w for w in want if w is not None]
    if layout.shape[0] != len(want) or any((row[0] == -1) != (w is None) for row, w in zip(layout.tolist(), want)):
        return False
    flat = torch.cat(present) if present else torch.zeros(0, dtype=torch.float64)
    room = torch.cat([x for x in slack if x is not None]) if present else flat
    return got.shape == flat.shape and bool(((got - flat).abs() <= ATOL + RTOL * flat.abs() + room).all())


@judge_only
def _generated_cause(cases: list[ModelCase], expected: _Expected, observed: list[dict[str, Any]],
                     world_size: int) -> str | None:
    """The one catalogued mistake whose gradients every rank holds after every case (and that differs from the
    specification somewhere); None when none, or more than one, fits."""
    fitting = []
    for mistake in GENERATED_MISTAKES:
        differs, fits = False, True
        for index, case in enumerate(cases):
            for rank in range(world_size):
                seen = observed[rank]["cases"][index]
                predicted = _predicted(case, expected.own[index], rank, mistake, world_size)
                right = _predicted(case, expected.own[index], rank, None, world_size)
                if not _grads_match(seen["grads"], predicted, seen["layout"], _slack(case, expected.own[index], rank)):
                    fits = False
                    break
                differs = differs or not all(
                    (a is None and b is None) or (a is not None and b is not None
                                                  and torch.allclose(a, b, rtol=RTOL, atol=ATOL))
                    for a, b in zip(predicted, right))
            if not fits:
                break
        if fits and differs:
            fitting.append(mistake)
    return GENERATED_MISTAKES[fitting[0]] if len(fitting) == 1 else None


@judge_only
def _expect_generated(student: Submission, device: Any, count: int) -> None:
    world_size = GENERATED_WORLD
    generator = domain.rng()
    cases = domain.draw(lambda g: generate_model_case(g, world_size), count, size=lambda c: c.size,
                        generator=generator)
    gradients = [torch.cat([generated_gradients(cases[i:i + CHUNK], rank) for i in range(0, len(cases), CHUNK)])
                 for rank in range(world_size)]
    expected = _generated_expectation(cases, world_size, gradients)  # expected values first
    # Runs of at most CHUNK cases each (the mutation benchmark draws thousands; one run has a time limit).
    observed: list[dict[str, Any]] = [{"cases": []} for _ in range(world_size)]
    for first in range(0, len(cases), CHUNK):
        chunk = cases[first:first + CHUNK]
        flat = [generated_gradients(chunk, rank) for rank in range(world_size)]
        try:
            seen_chunk = student.on_ranks(average_generated, world_size, [(chunk, flat[r]) for r in range(world_size)],
                                          device=device, collective_timeout=3.0).values()
        except StudentCodeError as exc:
            raise exc.within(f"average_gradients on {len(chunk)} generated models, {world_size} ranks "
                             f"(groups of 1 to {world_size} ranks)") from None
        for rank, seen in enumerate(seen_chunk):
            if seen["raised"] is not None:
                case = chunk[seen["at"]]
                raise StudentCodeError(StudentError(**seen["raised"])).within(
                    f"on rank {rank}, {case.call(world_size)}") from None
            if seen.get("group_gone"):
                fail(f"on rank {rank}, the process group was gone after {chunk[seen['at']].call(world_size)} "
                     f"returned: it must leave the group as it found it (no destroy_process_group())")
            observed[rank]["cases"].extend(seen["cases"])
    failing = []
    for index, case in enumerate(cases):
        bad = []
        for rank in range(world_size):
            seen = observed[rank]["cases"][index]
            want = _predicted(case, expected.own[index], rank, None, world_size)
            if not _grads_match(seen["grads"], want, seen["layout"], _slack(case, expected.own[index], rank)):
                bad.append((rank, "grads"))
            elif not torch.equal(seen["params"], expected.params[index][rank]):
                bad.append((rank, "params"))
            elif not torch.equal(seen["buffers"], expected.buffers[index][rank]):
                bad.append((rank, "buffers"))
        failing.append(bad)
    case = domain.smallest(cases, [bool(b) for b in failing], size=lambda c: c.size)
    if case is None:
        return
    index = cases.index(case)
    rank, what = failing[index][0]
    seen = observed[rank]["cases"][index]
    given = case.call(world_size)
    wrong = sum(bool(b) for b in failing)
    total = f" ({wrong} of the {len(cases)} generated models failed; this is the smallest)"
    if what in ("params", "buffers"):
        noun = "parameters" if what == "params" else "buffers"
        before = getattr(expected, what)[index]
        mean = torch.stack([before[r] for r in case.members]).mean(0)
        averaged = (not torch.allclose(before[rank], mean, rtol=RTOL, atol=ATOL)
                    and torch.allclose(seen[what], mean, rtol=RTOL, atol=ATOL))
        fail(f"on rank {rank}, the model's {noun} changed{total}: average_gradients must change the gradients only, "
             f"never the weights or buffers\n  input:    {given}\n  {difference(seen[what], before[rank])}"
             + (f"\n  likely cause: the {noun} were averaged over the ranks as well; only the gradients (p.grad) are"
                if averaged else ""))
    entries = [e for e in case.entries if e.alias is None]
    want = _predicted(case, expected.own[index], rank, None, world_size)
    layout = seen["layout"].tolist()
    room = _slack(case, expected.own[index], rank)
    offset = 0
    for entry, wanted, row, extra in zip(entries, want, layout, room):
        if (row[0] == -1) != (wanted is None):
            state = "had no gradient (its .grad was None)" if wanted is None else "had a gradient"
            after = "holds one afterwards" if wanted is None else "has none afterwards (.grad is None)"
            fail(f"on rank {rank}, parameter {entry.path!r} {state} and {after}{total}; parameters without a "
                 f"gradient are skipped, every other gradient holds the mean over the group\n  input:    {given}")
        if wanted is None:
            continue
        got = seen["grads"][offset:offset + row[1]]
        offset += row[1]
        code = {v: k for k, v in DTYPE_CODES.items()}.get(row[0])
        if code != getattr(torch, entry.dtype) or row[1] != entry.numel:
            fail(f"on rank {rank}, the gradient of {entry.path!r} is a {dtype_name(code) if code else '?'} tensor of "
                 f"{row[1]} elements; it was {entry.dtype} of shape {list(entry.shape)}{total}\n  input:    {given}")
        if not bool(((got - wanted).abs() <= ATOL + RTOL * wanted.abs() + extra).all()):
            what_text = (f"on rank {rank}, the gradient of {entry.path!r} is not the mean over the ranks "
                         f"{list(case.members)}" if rank in case.members else
                         f"on rank {rank}, which is not in the group and does not call average_gradients, the "
                         f"gradient of {entry.path!r} changed")
            dtype = getattr(torch, entry.dtype)
            fail_mismatch(what_text + total, given=given, expected=show(wanted.reshape(entry.shape).to(dtype), 6),
                          got=show(got.reshape(entry.shape).to(dtype), 6),
                          where=difference(got, wanted, rtol=RTOL, atol=ATOL),
                          cause=_generated_cause(cases, expected, observed, world_size))
    fail(f"on rank {rank}, the gradients are not the mean over the group{total}\n  input:    {given}")


@AVERAGE_GRADIENTS.check(points=2)
def averages_generated_models(student: Submission, device: Any) -> None:
    """Generated models (nested, tied, frozen parameters that keep a .grad, float32 and float64, empty ones, weights
    that differ per rank), gradients from 1e-6 to 1e6, groups of 1 to 3 ranks passed every way: every gradient is
    the group's mean, nothing else changes."""
    _expect_generated(student, device, 40)
