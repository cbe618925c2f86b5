"""lr_range_test(model, optimizer, loss_fn, loader, *, start_lr, end_lr, num_iter, smooth, diverge_threshold)
and suggest_lr(lrs, losses, *, skip_start, skip_end).

Where the expected values come from: the judge builds the very model, optimizer and data the student's
code gets (:func:`_build`, deterministic from a spec: same seed, same code, same device) and runs the
specification itself (:func:`_reference`). The student's lr_range_test runs in the runner inside
:func:`_sweep`, which returns observations only: what it returned, the lrs on every param group at each
optimizer.step() and whether that step moved the parameters, the modes seen at each forward, and the
parameters, buffers, modes and optimizer state before and after the call. Nothing in the model draws
random numbers (no Dropout), so the student's code may use the random generators as it likes.

suggest_lr's expected value is ``numpy.gradient`` of the trimmed losses.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
import math
import numbers
import random
import re
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_pre_hook
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.utils.data import DataLoader, TensorDataset

from graders.compare import one_torch_thread, show, show_number, type_name
from graders import domain
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import CheckFailed, StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise, judge_only
from graders.student import ErrorCase, Submission, expect_errors

LR_RANGE_TEST = exercise("lr_range_test", chapter="04_data", names=["lr_range_test", "suggest_lr"],
                         warm_compiler_stack=True)

DEFAULTS = dict(start_lr=1e-7, end_lr=10.0, num_iter=100, smooth=0.05, diverge_threshold=5.0)
_LOSS_RTOL, _LOSS_ATOL = 1e-5, 1e-7
_LR_RTOL = 1e-9
_TAG = "_lr_range_test_name"  # each submodule's name, kept in its __dict__ (deep copies keep it too)
_LABELS = {"": "the model", "0": "model[0] (Linear)", "1": "model[1] (BatchNorm1d)", "2": "model[2] (ReLU)",
           "1.0": "model[1][0] (BatchNorm1d)", "1.0.0": "model[1][0][0] (BatchNorm1d)",
           "3": "model[3] (Linear)"}


def _label(name: str, nest: int = 0) -> str:
    """A submodule's name as the student indexes it; the Sequentials holding a nested BatchNorm say so."""
    if name in ("1", "1.0")[:nest]:
        return f"model{''.join(f'[{part}]' for part in name.split('.'))} (Sequential)"
    return _LABELS.get(name, name)


# ==================================================================================================
# The objects handed to lr_range_test, and the specification run by the judge
# ==================================================================================================
class _ScaledCrossEntropy(nn.CrossEntropyLoss):
    """CrossEntropyLoss times a constant (the same curve, diverging at smaller lrs: a shorter default sweep), plus a
    constant (a loss below 0, as a log-likelihood can be: there the factor of the divergence test works the other
    way, and s_i > diverge_threshold * min(s_0..s_i) holds at s_0 itself for any threshold above 1)."""

    def __init__(self, scale: float, shift: float = 0.0) -> None:
        super().__init__()
        self.scale, self.shift = scale, shift

    def forward(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return super().forward(outputs, targets) * self.scale + self.shift


def _nested(module: nn.Module, depth: int) -> nn.Module:
    """``module`` inside ``depth`` Sequentials: the model's BatchNorm one or two levels below its children."""
    for _ in range(depth):
        module = nn.Sequential(module)
    return module


class _PassSampler(torch.utils.data.Sampler):
    """A shuffling sampler whose k-th pass is the k-th seeded permutation: a restart (a new iter(loader) that
    loads) gets a new order however the last pass ended. (RandomSampler draws one more permutation from its
    generator when a pass runs to its end, so with it an answer that restarts after len(loader) batches and one
    that restarts at StopIteration would see other orders.)"""

    def __init__(self, size: int, seed: int) -> None:
        self.size, self.seed, self.passes = size, seed, 0

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[int]:
        self.passes += 1
        order = torch.randperm(self.size, generator=torch.Generator().manual_seed(self.seed * 1000 + self.passes))
        return iter(order.tolist())


def _batchnorm(model: nn.Module) -> nn.Module:
    return next(m for m in model.modules() if isinstance(m, nn.BatchNorm1d))


def _build(spec: dict, device: torch.device) -> tuple[nn.Module, torch.optim.Optimizer, nn.Module, Any]:
    """An MLP with BatchNorm, an optimizer with three param groups of different lrs and some state
    (momentum buffers or Adam's moments, from two warm-up steps), CrossEntropyLoss and a loader."""
    with torch.random.fork_rng(devices=[]), one_torch_thread():  # tiny tensors: threads cost far more than they save
        torch.manual_seed(spec["seed"])
        model = nn.Sequential(nn.Linear(6, 16), _nested(nn.BatchNorm1d(16), spec.get("nest", 0)),
                              nn.ReLU(), nn.Linear(16, 3))
        x = torch.randn(spec["samples"], 6)
        y = ((x @ torch.randn(6, 3)).argmax(1) if spec["learnable"]  # the loss can fall, then diverge
             else torch.randint(0, 3, (spec["samples"],)))
    model, x, y = model.to(device), x.to(device), y.to(device)
    groups = [{"params": list(model[0].parameters()), "lr": 0.05},
              {"params": list(model[1].parameters()), "lr": 0.02},
              {"params": list(model[3].parameters()), "lr": 0.03}]
    if spec["kind"] == "adam":
        optimizer: torch.optim.Optimizer = torch.optim.Adam(groups, lr=0.01)
    else:
        optimizer = torch.optim.SGD(groups, lr=0.01, momentum=0.9)
    shift = spec.get("loss_shift", 0.0)
    loss_fn = (nn.CrossEntropyLoss() if spec["loss_scale"] == 1 and not shift
               else _ScaledCrossEntropy(spec["loss_scale"], shift))
    size = spec["batch_size"]
    with one_torch_thread():
        for first in (0, size):  # the optimizer gets state, BatchNorm's running statistics move
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x[first:first + size]), y[first:first + size]).backward()
            optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if spec.get("stale_grads"):  # gradients left by earlier work: "zero grads" first keeps them out of step 0
        for number, p in enumerate(model.parameters()):
            p.grad = torch.full_like(p, 100.0 * (-1) ** number)
    model.train(spec["mode"] != "eval")
    if spec["mode"] == "mixed":  # a frozen BatchNorm inside a model in training mode, as in fine-tuning
        _batchnorm(model).eval()
    if spec["loader"] == "list":
        loader: Any = [(x[i:i + size], y[i:i + size]) for i in range(0, len(x), size)]
    elif spec["loader"] == "shuffled":  # each restart (a new iter(loader)) draws a new order from its generator
        loader = DataLoader(TensorDataset(x, y), batch_size=size, sampler=_PassSampler(len(x), spec["seed"]))
    else:
        loader = DataLoader(TensorDataset(x, y), batch_size=size, shuffle=False)
    return model, optimizer, loss_fn, loader


def _spec_lr(i: int, start_lr: float, end_lr: float, num_iter: int) -> float:
    return start_lr * (end_lr / start_lr) ** (i / (num_iter - 1))


def _ema(raw: Sequence[float], smooth: float) -> list[float]:
    """s_0 = loss_0, s_i = smooth * loss_i + (1 - smooth) * s_(i-1)."""
    out: list[float] = []
    for loss in raw:
        out.append(loss if not out else smooth * loss + (1 - smooth) * out[-1])
    return out


def _first_over(values: Sequence[float], threshold: float, reference: str = "min") -> int | None:
    """The first i where values[i] > threshold * min(values[:i+1]) (or * values[0]), else None."""
    lowest = math.inf
    for i, v in enumerate(values):
        lowest = min(lowest, v)
        if reference == "min or equal":  # a known mistake: >= instead of >
            if v >= threshold * lowest:
                return i
            continue
        if v > threshold * (lowest if reference == "min" else values[0]):
            return i
    return None


@dataclasses.dataclass(frozen=True)
class _Run:
    lrs: list[float]
    losses: list[float]  # smoothed
    raw: list[float]


@judge_only
def _reference(spec: dict, params: dict, device: torch.device, **flags: bool) -> _Run:
    """The specification as a script (see :func:`_run_reference`), remembered: it is deterministic."""
    return _run_reference(tuple(sorted(spec.items())), tuple(sorted(params.items())), str(device),
                          tuple(sorted(flags.items())))


@judge_only
@functools.lru_cache(maxsize=128)
def _run_reference(spec_items: tuple, params_items: tuple, device: str, flags_items: tuple) -> _Run:
    return _script(dict(spec_items), dict(params_items), torch.device(device), **dict(flags_items))


@judge_only
def _script(spec: dict, params: dict, device: torch.device, *, stop: bool = True, zero_grad: bool = True,
            same_batch: bool = False, loss_after_step: bool = False, replay: bool = False,
            zero_late: bool = False) -> _Run:
    """The specification as a script; the keyword flags give known wrong variants, for diagnoses."""
    model, optimizer, loss_fn, loader = _build(spec, device)
    p = {**DEFAULTS, **params}
    lrs: list[float] = []
    raw: list[float] = []
    with one_torch_thread():
        model.train()
        batches = itertools.cycle(loader) if replay else iter(loader)  # replay: the first pass again, kept
        for i in range(p["num_iter"]):
            lr = _spec_lr(i, p["start_lr"], p["end_lr"], p["num_iter"])
            for group in optimizer.param_groups:
                group["lr"] = lr
            batch = next(iter(loader)) if same_batch else next(batches, None)
            if batch is None:
                batches = iter(loader)
                batch = next(batches)
            inputs, targets = batch
            if zero_grad and not zero_late:
                optimizer.zero_grad()
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
            if zero_late:  # a known mistake: zeroed after the step, so what .grad held before the call leaks in
                optimizer.zero_grad()
            if loss_after_step:
                loss = loss_fn(model(inputs), targets)
            raw.append(loss.item())
            lrs.append(lr)
            if stop and _first_over(_ema(raw, p["smooth"]), p["diverge_threshold"]) == i:
                break
    return _Run(lrs, _ema(raw, p["smooth"]), raw)


# ==================================================================================================
# In the runner: the student's sweep, watched
# ==================================================================================================
def _model_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: t.detach().clone() for name, t in model.state_dict().items()}


def _snapshot(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict:
    model_params = [id(p) for p in model.parameters()]
    return {
        "state": _model_state(model),
        "params": [name for name, _ in model.named_parameters()],
        "modes": {name: m.training for name, m in model.named_modules()},
        "optimizer": copy.deepcopy(optimizer.state_dict()),
        "optimizer_on_model": all(id(p) in model_params for g in optimizer.param_groups for p in g["params"]),
    }


def _optimizer_tensors(optimizer: torch.optim.Optimizer) -> dict:
    """The optimizer's state as optimizer.state_dict()["state"] has it (by index), cheaply copied."""
    params = [p for g in optimizer.param_groups for p in g["params"]]
    return {i: {k: v.detach().clone() if isinstance(v, torch.Tensor) else v for k, v in optimizer.state[p].items()}
            for i, p in enumerate(params) if p in optimizer.state}


def _lr_value(value: Any) -> Any:
    try:
        return float(value)
    except Exception:  # noqa: BLE001 - an lr the student set to something odd is shown as it is
        return repr(value)[:80]


def _pack_steps(steps: list[dict]) -> dict:
    """The steps as a few tensors (what crosses back to the judge is read object by object: keep it small)."""
    kinds = list(dict.fromkeys(s["optimizer"] for s in steps))
    lrs: Any = [s["lrs"] for s in steps]
    if lrs and all(len(row) == len(lrs[0]) and all(isinstance(v, float) for v in row) for row in lrs):
        lrs = torch.tensor(lrs, dtype=torch.float64)
    return {"lrs": lrs, "moved": torch.tensor([s["moved"] for s in steps], dtype=torch.bool),
            "optimizer": torch.tensor([kinds.index(s["optimizer"]) for s in steps], dtype=torch.long),
            "optimizers": [list(kind) for kind in kinds]}


def _unpack_steps(packed: dict) -> list[dict]:
    lrs = packed["lrs"].tolist() if isinstance(packed["lrs"], torch.Tensor) else packed["lrs"]
    keys = ("given", "type", "groups", "on_model")
    return [{"lrs": row, "moved": moved, **dict(zip(keys, packed["optimizers"][kind]))}
            for row, moved, kind in zip(lrs, packed["moved"].tolist(), packed["optimizer"].tolist())]


def _sweep(student: RunnerStudent, spec: dict, params: dict, device: str, restore: bool = False) -> dict:
    """Build the objects, call the student's lr_range_test on them, and report what happened.

    ``restore``: also the model's and optimizer's state before and after the call, and as the last step left it.
    """
    model, optimizer, loss_fn, loader = _build(spec, torch.device(device))
    for name, module in model.named_modules():
        module.__dict__[_TAG] = name
    before = _snapshot(model, optimizer) if restore else {}
    before["lrs"] = [g["lr"] for g in optimizer.param_groups]
    original = {id(p) for p in model.parameters()}
    steps: list[dict] = []
    modes: dict[tuple, None] = {}  # each distinct set of training flags seen at a forward of the model
    forwards: list[int] = [0]
    loads: list[bool] = []  # one per model.load_state_dict call: does it pass the model's own tensors?
    end: dict = {}
    pending: list = []

    def before_step(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        tensors = [p for g in opt.param_groups for p in g["params"]]
        steps.append({"lrs": [_lr_value(g.get("lr")) for g in opt.param_groups], "moved": False,
                      "optimizer": (opt is optimizer, type(opt).__name__, len(opt.param_groups),
                                    any(id(p) in original for p in tensors))})
        pending[:] = [(p, p.detach().clone()) for p in tensors]

    def after_step(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        steps[-1]["moved"] = any(not torch.equal(p.detach(), old) for p, old in pending)
        if restore and steps[-1]["optimizer"][3]:  # what the run leaves, should nothing restore it
            end["state"] = _model_state(model)
            end["optimizer"] = _optimizer_tensors(optimizer)

    def at_forward(module: nn.Module, args: Any) -> None:
        if module.__dict__.get(_TAG) == "":
            forwards[0] += 1
            modes[tuple((m.__dict__[_TAG], m.training) for m in module.modules() if _TAG in m.__dict__)] = None

    real_load = nn.Module.load_state_dict

    def load_state_dict(self: nn.Module, state_dict: Any, *args: Any, **kwargs: Any) -> Any:
        if self is model:
            try:
                own = {k: v.data_ptr() for k, v in self.state_dict().items()}
                loads.append(any(isinstance(v, torch.Tensor) and own.get(k) == v.data_ptr()
                                 for k, v in state_dict.items()))
            except Exception:  # noqa: BLE001 - an odd argument: the real method will say what is wrong
                loads.append(False)
        return real_load(self, state_dict, *args, **kwargs)

    hooks = [register_optimizer_step_pre_hook(before_step), register_optimizer_step_post_hook(after_step),
             register_module_forward_pre_hook(at_forward)]
    nn.Module.load_state_dict = load_state_dict  # type: ignore[method-assign]
    try:
        got = student.run(student.get("lr_range_test"), model, optimizer, loss_fn, loader, **params)
    finally:
        nn.Module.load_state_dict = real_load  # type: ignore[method-assign]
        for hook in hooks:
            hook.remove()
    after: dict = {}
    if restore:
        try:
            after = _snapshot(model, optimizer)
        except Exception as exc:  # noqa: BLE001 - the student's code left the objects unreadable
            after = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"got": got, "steps": _pack_steps(steps), "forwards": forwards[0], "modes": [dict(m) for m in modes],
            "loads": loads, "before": before, "after": after, "end": end or None}


# ==================================================================================================
# In the judge: one scenario, what it expects, and how it names mistakes
# ==================================================================================================
def _close(got: Sequence[float], expected: Sequence[float], rtol: float = _LOSS_RTOL, atol: float = _LOSS_ATOL) -> bool:
    return len(got) == len(expected) and all(
        (math.isnan(g) and math.isnan(e)) or math.isclose(g, e, rel_tol=rtol, abs_tol=atol)
        for g, e in zip(got, expected))


def _first_difference(got: Sequence[float], expected: Sequence[float], rtol: float, atol: float) -> str | None:
    for i, (g, e) in enumerate(zip(got, expected)):
        if not _close([g], [e], rtol, atol):
            return f"first at iteration {i}: expected {show_number(e)}, returned {show_number(g)}"
    return None


def _short(values: Sequence[Any], limit: int = 6) -> str:
    values = list(values)
    more = f", ... ({len(values)} values)" if len(values) > limit else ""
    return "[" + ", ".join(show_number(v) for v in values[:limit]) + more + "]"


def _same(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(isinstance(u, float) and math.isclose(u, v, rel_tol=_LR_RTOL) for u, v in zip(a, b))


def _parse(got: Any) -> tuple[list[float], list[float]]:
    """(lrs, losses) as two lists of floats, or a failure that says what came back instead."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        fail(f"lr_range_test returned {show(got)} (a {type_name(got)}); it must return (lrs, losses), a tuple "
             "of two lists of floats")
    out = []
    for name, values in zip(("lrs", "losses"), got):
        if not isinstance(values, (list, tuple)):
            fail(f"lr_range_test returned {name} as a {type_name(values)} ({show(values)}); it must be a list of "
                 "floats")
        for v in values:
            if isinstance(v, torch.Tensor):
                fail(f"lr_range_test returned {name} holding tensors ({show(v)}); record plain floats "
                     f"({'loss.item()' if name == 'losses' else 'float(lr)'}): a tensor keeps its device memory, "
                     "and a loss tensor keeps the graph of its iteration alive")
            if not isinstance(v, numbers.Real) or isinstance(v, bool):
                fail(f"lr_range_test returned {name} holding {show(v)} (a {type_name(v)}); it must be a list of "
                     "floats")
        out.append([float(v) for v in values])
    return out[0], out[1]


def _from_zero(raw: Sequence[float], smooth: float) -> list[float]:
    """The exponential average started at 0 instead of at loss_0."""
    out: list[float] = []
    for loss in raw:
        out.append(smooth * loss + (1 - smooth) * (out[-1] if out else 0.0))
    return out


@dataclasses.dataclass
class _Seen:
    """What the runner observed during one call of the student's lr_range_test."""

    lrs: list[float]
    losses: list[float]
    steps: list[dict]  # at each optimizer.step(): the groups' lrs, whether it moved the parameters, which optimizer
    forwards: int  # how many times the model was called
    modes: list[dict]  # each distinct set of the submodules' training flags seen at those calls
    loads: list[bool]
    before: dict
    after: dict
    end: dict | None

    @property
    def trained(self) -> bool:
        return any(step["moved"] for step in self.steps)


def _spec(*, seed: int = 0, kind: str = "sgd", mode: str = "train", batches: int = 16, batch_size: int = 8,
          samples: int | None = None, learnable: bool = False, loader: str = "dataloader",
          loss_scale: float = 1, loss_shift: float = 0.0, stale_grads: bool = False, nest: int = 0) -> dict:
    """What :func:`_build` makes: kind "sgd" (momentum 0.9) or "adam"; mode "train", "eval" or "mixed" (a frozen
    BatchNorm); loader "dataloader", "shuffled" (a new order at each restart) or "list"; labels that the model can
    learn or random ones; the loss scaled and shifted (below 0); gradients left in .grad before the call; the
    BatchNorm ``nest`` Sequentials deep."""
    spec = dict(seed=seed, kind=kind, mode=mode, batch_size=batch_size, samples=samples or batches * batch_size,
                learnable=learnable, loader=loader, loss_scale=loss_scale)
    # the options added later are only written when set, so that the earlier specs (and their cache keys) stay
    extra = dict(loss_shift=loss_shift, stale_grads=stale_grads, nest=nest)
    return {**spec, **{k: v for k, v in extra.items() if v}}


class _Trial:
    """One call of lr_range_test: the objects' spec, the keyword arguments, and the expected run."""

    def __init__(self, device: torch.device, *, seed: int = 0, kind: str = "sgd", mode: str = "train",
                 batches: int = 16, batch_size: int = 8, samples: int | None = None, learnable: bool = False,
                 loader: str = "dataloader", loss_scale: float = 1, loss_shift: float = 0.0,
                 stale_grads: bool = False, nest: int = 0, **params: Any) -> None:
        self.device = device
        self.spec = _spec(seed=seed, kind=kind, mode=mode, batches=batches, batch_size=batch_size, samples=samples,
                          learnable=learnable, loader=loader, loss_scale=loss_scale, loss_shift=loss_shift,
                          stale_grads=stale_grads, nest=nest)
        self.params = params
        self.p = {**DEFAULTS, **params}
        self.expected = _reference(self.spec, params, device)

    def given_like(self, step: dict) -> bool:
        """The step was taken by the optimizer given, or by a copy of it (same type, same 3 param groups)."""
        kind = "Adam" if self.spec["kind"] == "adam" else "SGD"
        return step["given"] or (step["type"] == kind and step["groups"] == 3)

    def variant(self, **flags: Any) -> _Run:
        return _reference(self.spec, self.params, self.device, **flags)

    @property
    def batches(self) -> int:
        return -(-self.spec["samples"] // self.spec["batch_size"])

    def given(self) -> str:
        spec = self.spec
        shown = "".join(f", {k}={show_number(v)}" for k, v in self.params.items())
        mode = {"train": "in training mode", "eval": "in eval mode",
                "mixed": "in training mode with its BatchNorm in eval mode"}[spec["mode"]]
        scale = f" times {show_number(spec['loss_scale'])}" if spec["loss_scale"] != 1 else ""
        shift = spec.get("loss_shift", 0.0)
        if shift:
            scale += f" {'-' if shift < 0 else '+'} {show_number(abs(shift))}"
        learnable = " (labels a function of the inputs: the loss falls first)" if spec["learnable"] else ""
        depth = spec.get("nest", 0)
        where = (f" (inside {depth} nested Sequential{'s' if depth > 1 else ''}, model[1]{'[0]' * depth})"
                 if depth else "")
        extras = ", every parameter's .grad holding +-100 before the call" if spec.get("stale_grads") else ""
        loader = {"list": "a list", "shuffled": "a shuffling DataLoader (a new order at each pass)"}.get(
            spec["loader"], "a DataLoader")
        return (f"lr_range_test(model, optimizer, loss_fn, loader{shown}); an MLP with BatchNorm{where} {mode}"
                f"{extras}, {'Adam' if spec['kind'] == 'adam' else 'SGD(momentum=0.9)'} with 3 param groups (lrs "
                f"0.05, 0.02, 0.03), CrossEntropyLoss{scale}, {loader} of "
                f"{self.batches} batches of up to {spec['batch_size']}{learnable}")

    def observe(self, student: Submission, *, restore: bool = False) -> _Seen:
        try:
            seen = student.scenario(_sweep, self.spec, self.params, str(self.device), restore)
        except StudentCodeError as exc:
            if exc.error.is_instance(StopIteration):
                fail(f"lr_range_test {exc.error.describe()}\n  input: {self.given()}\n  likely cause: the loader "
                     "ran out and was not restarted; when next() raises StopIteration, start it again with "
                     "iter(loader)")
            raise exc.within(self.given()) from None
        lrs, losses = _parse(seen["got"])
        return _Seen(lrs, losses, _unpack_steps(seen["steps"]), seen["forwards"], seen["modes"], seen["loads"],
                     seen["before"], seen["after"], seen["end"])

    # -- the run --------------------------------------------------------------------------------------
    def expect_run(self, seen: _Seen, what: str, *, stop_cause: Any = "this trial's") -> None:
        """The recorded lrs and smoothed losses are those of the specification's run, which stops where it does.
        ``stop_cause``: the cause to name for a wrong stop, found over several trials (``_stop_cause_over``)."""
        expected, lrs, losses = self.expected, seen.lrs, seen.losses
        if len(lrs) != len(losses):
            fail(f"{what}\n  input: {self.given()}\n  lrs has {len(lrs)} values but losses has {len(losses)}; "
                 "record one lr and one smoothed loss per iteration")
        n = min(len(lrs), len(expected.lrs))
        if not n or not _close(lrs[:n], expected.lrs[:n], _LR_RTOL, 0.0):
            fail_mismatch(f"{what}: wrong learning rates", given=self.given(), expected=_short(expected.lrs),
                          got=_short(lrs), where=_first_difference(lrs, expected.lrs, _LR_RTOL, 0.0),
                          cause=self.lr_cause(seen))
        # The losses both runs share first: a run that trains differently also stops elsewhere, and its
        # first wrong loss names the mistake better than where it stopped.
        if not _close(losses[:n], expected.losses[:n]):
            fail_mismatch(f"{what}: wrong smoothed losses", given=self.given(), expected=_short(expected.losses),
                          got=_short(losses), where=_first_difference(losses, expected.losses, _LOSS_RTOL, _LOSS_ATOL),
                          cause=self.loss_cause(seen))
        if len(lrs) != len(expected.lrs):
            fail_mismatch(f"{what}: the run stopped at the wrong iteration", given=self.given(),
                          expected=f"{len(expected.lrs)} iterations",
                          cause=self.stop_cause(seen) if stop_cause == "this trial's" else stop_cause,
                          got=f"{len(lrs)} iterations (the first {n} lrs and smoothed losses are right)")

    def expect_trained(self, seen: _Seen, what: str) -> None:
        """Restoring is only credited after a sweep that trained: some optimizer.step() moved a parameter."""
        if seen.trained:
            return
        facts = (f"optimizer.step() ran {len(seen.steps)} times but never changed a parameter" if seen.steps
                 else "optimizer.step() was never called")
        fail(f"{what}: the sweep did not train, so there was nothing to restore\n  input: {self.given()}\n"
             f"  {facts}; each iteration trains one batch: zero grads, forward, loss_fn(outputs, targets), "
             "backward, step")

    # -- diagnoses --------------------------------------------------------------------------------------
    def lr_cause(self, seen: _Seen) -> str | None:
        lrs, n = seen.lrs, len(seen.lrs)
        start, end, num = self.p["start_lr"], self.p["end_lr"], self.p["num_iter"]
        applied = [step["lrs"][0] for step in seen.steps[:n] if step["lrs"]]
        spec = [_spec_lr(i, start, end, num) for i in range(n)]
        following = spec[1:] + [_spec_lr(n, start, end, num)]
        if n >= 2 and len(applied) >= n and _same(applied, spec) and _close(lrs, following, _LR_RTOL, 0.0):
            return ("each step ran with the right lr, but the lr recorded is the NEXT iteration's: record the lr "
                    "that iteration i's step used")
        with np.errstate(all="ignore"):
            raw_logspace = [float(v) for v in np.logspace(start, end, num)[:n]]
        known = [
            ([start + (end - start) * i / (num - 1) for i in range(n)],
             "the sweep is linear (np.linspace-like); the spec grows the lr geometrically: "
             "start_lr * (end_lr / start_lr) ** (i / (num_iter - 1))"),
            ([start * (end / start) ** (i / num) for i in range(n)],
             "the exponent is i / num_iter; it must be i / (num_iter - 1), so that the last iteration reaches end_lr"),
            (raw_logspace, "np.logspace takes exponents of 10, not the learning rates themselves: "
                           "np.logspace(math.log10(start_lr), math.log10(end_lr), num_iter), or "
                           "np.geomspace(start_lr, end_lr, num_iter)"),
            ([end * (start / end) ** (i / (num - 1)) for i in range(n)],
             "the sweep runs backwards, from end_lr down to start_lr"),
            ([start * (end / start) ** ((i + 1) / (num - 1)) for i in range(n)],
             "off by one: iteration i (from 0) uses the exponent i / (num_iter - 1), so the first lr is start_lr"),
        ]
        for wrong, cause in known:
            if n and _close(lrs, wrong, _LR_RTOL, 0.0) and not _close(wrong, spec, _LR_RTOL, 0.0):
                return cause
        return None

    def applied_cause(self, seen: _Seen) -> str | None:
        """Name the mistake when the param groups' lrs at optimizer.step() are not the recorded ones."""
        original = seen.before["lrs"]
        pairs = [(step["lrs"], lr) for step, lr in zip(seen.steps, seen.lrs)]
        if not pairs:
            return None
        if all(_same(at_step, original) for at_step, _ in pairs):
            return ("the param groups' lrs never changed: step() reads group['lr'] of each of "
                    "optimizer.param_groups; set it there (optimizer.defaults['lr'] or a local variable is not "
                    "read by step())")
        if _same(pairs[0][0], original):
            return (f"the first optimizer.step() ran with the optimizer's own lrs {_short(original)}: the lr is set "
                    "after the step (for the next iteration?); set the lr of iteration i on the param groups BEFORE "
                    "that iteration's optimizer.step()")
        for at_step, lr in pairs:
            hit = [isinstance(v, float) and math.isclose(v, lr, rel_tol=_LR_RTOL) for v in at_step]
            if any(hit) and not all(hit):
                return ("the lr was not set on every param group (optimizer.param_groups[0] only?); loop: for group "
                        "in optimizer.param_groups: group['lr'] = lr")
        return None

    def loss_cause(self, seen: _Seen) -> str | None:
        """Name the mistake when the lrs are right and the losses match a known wrong computation."""
        expected, smooth = self.expected, self.p["smooth"]
        n = min(len(seen.losses), len(expected.raw))
        got, raw = seen.losses[:n], expected.raw[:n]
        known = [
            (raw, "the losses are the raw batch losses, not smoothed: s_i = smooth * loss_i + (1 - smooth) * s_(i-1)"),
            ([v / (1 - (1 - smooth) ** (i + 1)) if smooth else math.nan for i, v in enumerate(_from_zero(raw, smooth))],
             "the smoothed loss is bias-corrected (divided by 1 - (1 - smooth) ** (i + 1), as fastai does); the "
             "spec's recursion starts at s_0 = loss_0 and has no correction"),
            (_ema(raw, 1 - smooth), "smooth and 1 - smooth are swapped: s_i = smooth * loss_i + (1 - smooth) * "
                                    "s_(i-1)"),
            (_from_zero(raw, smooth), "the smoothed loss starts from 0 (s_0 = smooth * loss_0); the spec starts the "
                                      "recursion at s_0 = loss_0"),
        ]
        if smooth != DEFAULTS["smooth"]:
            known.append((_ema(raw, DEFAULTS["smooth"]), f"the losses are smoothed with 0.05, not with the smooth "
                                                         f"argument ({show_number(smooth)}) the caller passed"))
        for wrong, cause in known:
            if n >= 2 and _close(got, wrong) and not _close(wrong, expected.losses[:n]):
                return cause
        applied = self.applied_cause(seen)
        if applied:
            return applied
        for flags, cause in (
            ({"zero_grad": False}, "the gradients are never zeroed, so they accumulate over the iterations: call "
                                   "optimizer.zero_grad() before each backward"),
            ({"same_batch": True}, "every iteration trains on the first batch (next(iter(loader)) makes a new "
                                   "iterator each time); keep one iterator and call next() on it"),
            ({"loss_after_step": True}, "the recorded loss was computed again AFTER optimizer.step(); the spec "
                                        "records loss_i, the loss of the forward pass that the step trained on "
                                        "(loss.item() of that same loss)"),
            ({"zero_late": True}, "the gradients are zeroed after optimizer.step(), not before the backward: "
                                  "what .grad held when lr_range_test was called leaks into the first step; zero "
                                  "them first in each iteration"),
            ({"replay": True}, "after the loader ran out, the first pass's batches came again in the same order "
                               "(itertools.cycle keeps what it saw and replays it); the spec restarts the loader, "
                               "iter(loader) again, which gives a shuffling DataLoader a new order"),
        ):
            wrong = self.variant(stop=False, **flags).losses[:n]
            # (a mistake whose losses equal the right ones so far is no evidence: every variant's s_0 is the same)
            if _close(got, wrong, 1e-4, 1e-6) and not _close(wrong, expected.losses[:n], 1e-4, 1e-6):
                return cause
        return None

    def stop_cause(self, seen: _Seen) -> str | None:
        expected, lrs, losses = self.expected, seen.lrs, seen.losses
        threshold, stopped = self.p["diverge_threshold"], len(expected.lrs) - 1
        diverged = _first_over(expected.losses, threshold) == stopped
        at_or_above = _first_over(self.variant(stop=False).losses, threshold, "min or equal")
        if at_or_above is not None and len(lrs) == at_or_above + 1 != stopped + 1 and _close(
                losses, expected.losses[:len(lrs)]):
            return ("the divergence test uses >= where the spec has >: stop only when s_i > diverge_threshold * "
                    "min(s_0, ..., s_i), strictly above (with diverge_threshold=1, s_0 >= 1 * s_0 stops at once)")
        if diverged and len(lrs) == stopped and _close(losses, expected.losses[:stopped]):
            return ("the run stopped before recording the iteration whose smoothed loss crossed the threshold; "
                    "record iteration i first, then stop")
        if len(lrs) == self.p["num_iter"] > len(expected.lrs):
            return "the run never stopped: after recording s_i, stop when s_i > diverge_threshold * min(s_0, ..., s_i)"
        if len(lrs) == self.batches < len(expected.lrs):
            return ("the sweep ended when the loader ran out; the spec restarts the loader (a new iter(loader)) and "
                    "goes on until num_iter or divergence")
        full = self.variant(stop=False)
        for stop, cause in (
            (_first_over(full.raw, threshold), "the divergence test used the raw batch loss; the spec compares the "
                                               "SMOOTHED loss s_i with diverge_threshold * min(s_0, ..., s_i)"),
            (_first_over(full.losses, threshold, "first"), "the divergence test compared s_i with the first loss "
                                                           "s_0; the spec compares it with the smallest smoothed "
                                                           "loss so far, min(s_0, ..., s_i)"),
            (_first_over(full.losses, DEFAULTS["diverge_threshold"]) if threshold != DEFAULTS["diverge_threshold"]
             else None, f"the run stopped where s_i > 5 * min(s_0..s_i): the diverge_threshold argument "
                        f"({show_number(threshold)}) the caller passed was not used"),
        ):
            if stop is not None and len(lrs) == stop + 1 != stopped + 1:
                return cause
        return None


# Divergence tests a student may write instead of the specification's, and where each would stop a trial.
_STOP_MISTAKES = {
    "raw": "the divergence test used the raw batch loss; the spec compares the SMOOTHED loss s_i with "
           "diverge_threshold * min(s_0, ..., s_i)",
    "first": "the divergence test compared s_i with the first loss s_0; the spec compares it with the smallest "
             "smoothed loss so far, min(s_0, ..., s_i)",
    "default": "the run stopped where s_i > 5 * min(s_0..s_i): the diverge_threshold argument the caller passed "
               "was not used",
    "or equal": "the divergence test uses >= where the spec has >: stop only when s_i > diverge_threshold * "
                "min(s_0, ..., s_i), strictly above",
    "before recording": "the run stopped before recording the iteration whose smoothed loss crossed the threshold; "
                        "record iteration i first, then stop",
    "never": "the run never stopped: after recording s_i, stop when s_i > diverge_threshold * min(s_0, ..., s_i)",
}


def _stop_predictions(trial: "_Trial") -> dict[str, int]:
    """How many iterations each catalogued mistake (and each other threshold: a changed default, a factor off,
    which explain a wrong stop as well and name nothing) would record in ``trial``."""
    full, threshold, limit = trial.variant(stop=False), trial.p["diverge_threshold"], trial.p["num_iter"]

    def length(stop: int | None) -> int:
        return limit if stop is None else stop + 1

    right = len(trial.expected.lrs)
    found = {"raw": length(_first_over(full.raw, threshold)),
             "first": length(_first_over(full.losses, threshold, "first")),
             "or equal": length(_first_over(full.losses, threshold, "min or equal")),
             "before recording": right - 1 if right < limit else right, "never": limit}
    # With the default threshold, ignoring the argument changes nothing: that trial stops right under it.
    found["default"] = length(_first_over(full.losses, DEFAULTS["diverge_threshold"]))
    for label, other in (("twice the threshold", threshold * 2), ("half the threshold", threshold / 2),
                         ("the threshold + 1", threshold + 1), ("the threshold - 1", threshold - 1),
                         ("a threshold of 10", 10.0), ("a threshold of 2", 2.0), ("a threshold of 3", 3.0)):
        if other > 1:
            found[label] = length(_first_over(full.losses, other))
    lowest = math.inf  # s_i > diverge_threshold + min(...): added, not multiplied
    found["threshold added"] = limit
    for i, value in enumerate(full.losses):
        lowest = min(lowest, value)
        if value > threshold + lowest:
            found["threshold added"] = i + 1
            break
    return found


def _stop_cause_over(trials: Sequence["_Trial"], seen: Sequence[_Seen]) -> str | None:
    """The one catalogued mistake that predicts the number of iterations of every trial (those that stopped right
    too), where at least one stopped wrong; None when none or more than one fits, or when another threshold fits as
    well (issue 32: a default of 10 instead of 5 was told "compared with s_0")."""
    if not any(len(s.lrs) != len(t.expected.lrs) for t, s in zip(trials, seen)):
        return None
    predictions = [_stop_predictions(t) for t in trials]
    fitting = [name for name in predictions[0]
               if all(name in p and p[name] == len(s.lrs) for p, s in zip(predictions, seen))]
    if len(fitting) != 1 or fitting[0] not in _STOP_MISTAKES:
        return None
    return _STOP_MISTAKES[fitting[0]]


def _diverging(device: torch.device, *, kind: str = "sgd", learnable: bool = False, batches: int = 3,
               seeds: Sequence[int] = (0, 1, 2, 3, 4, 5), tells_apart: Sequence[str] = (), **params: Any) -> _Trial:
    """A run whose smoothed loss crosses the threshold clearly (far from a tie), before num_iter.

    ``tells_apart``: known wrong divergence tests that must stop this run elsewhere (or never): "raw" (the raw
    batch loss), "first" (s_i against s_0), "default" (against 5 * min).
    """
    for seed in seeds:
        trial = _Trial(device, seed=seed, kind=kind, learnable=learnable, batches=batches, **params)
        losses, threshold = trial.expected.losses, trial.p["diverge_threshold"]
        ratios = [s / min(losses[:i + 1]) for i, s in enumerate(losses)]
        if not (len(losses) < trial.p["num_iter"] and all(map(math.isfinite, losses))
                and max(ratios[:-1], default=0.0) < 0.98 * threshold and ratios[-1] > 1.02 * threshold):
            continue
        full, stop = trial.variant(stop=False), len(losses) - 1
        wrong = {"raw": _first_over(full.raw, threshold), "first": _first_over(full.losses, threshold, "first"),
                 "default": _first_over(full.losses, DEFAULTS["diverge_threshold"])}
        if all(wrong[name] != stop for name in tells_apart):
            return trial
    raise RuntimeError("grader bug: no diverging scenario crosses the threshold clearly")


def _sgd_diverging(device: torch.device, batches: int = 3) -> _Trial:
    return _diverging(device, batches=batches, tells_apart=("raw",), start_lr=1e-3, end_lr=100.0, num_iter=30)


# ==================================================================================================
# lr_range_test's checks
# ==================================================================================================
@LR_RANGE_TEST.check(points=1)
def validates_arguments(student: Submission, device: torch.device) -> None:
    """ValueError when start_lr <= 0, end_lr <= start_lr or num_iter < 2; values just inside run the sweep."""
    spec = _spec(batches=2, loader="list")
    cases = [  # each boundary case after a clear one: a student who passes the first and not the second used <
        (dict(start_lr=-1e-3, end_lr=1.0, num_iter=5), "start_lr <= 0", None),
        (dict(start_lr=0.0, end_lr=1.0, num_iter=5), "start_lr <= 0",
         "start_lr == 0 must be rejected too: the test is start_lr <= 0, not start_lr < 0"),
        (dict(start_lr=1e-2, end_lr=1e-3, num_iter=5), "end_lr <= start_lr", None),
        (dict(start_lr=1e-3, end_lr=1e-3, num_iter=5), "end_lr <= start_lr",
         "end_lr == start_lr must be rejected too: the test is end_lr <= start_lr, not end_lr < start_lr"),
        (dict(start_lr=1e-4, end_lr=1e-2, num_iter=0), "num_iter < 2", None),
        (dict(start_lr=1e-4, end_lr=1e-2, num_iter=1), "num_iter < 2",
         "num_iter == 1 must be rejected too: the test is num_iter < 2 (one iteration has no i / (num_iter - 1))"),
    ]
    expect_errors(student, ValueError, "lr_range_test", [
        ErrorCase(_build(spec, device), kwargs=kwargs, why=why, hint=boundary, other_hint=boundary,
                  # model and optimizer pickled together: the optimizer keeps its params
                  call=f"lr_range_test(model, optimizer, loss_fn, loader, "
                       f"{', '.join(f'{k}={show_number(v)}' for k, v in kwargs.items())})")
        for kwargs, why, boundary in cases],
        missing_check="no argument is checked before the sweep: none of these invalid calls raised")
    # Valid values next to the invalid ones must run a sweep that trains: raising, or doing nothing, is
    # not validation.
    for kwargs in (dict(start_lr=5e-3, end_lr=5e-3 * (1 + 1e-6), num_iter=2),
                   dict(start_lr=1e-3, end_lr=0.2, num_iter=3)):
        trial = _Trial(device, batches=3, loader="list", **kwargs)
        try:
            seen = trial.observe(student)
        except StudentCodeError as exc:
            if exc.error.is_instance(ValueError):
                fail(f"lr_range_test raised ValueError for valid arguments\n  input: {trial.given()}\n  "
                     f"{exc.error.describe()}\n  likely cause: raise ValueError only when start_lr <= 0, "
                     "end_lr <= start_lr or num_iter < 2 (end_lr just above start_lr, num_iter=2 are valid)")
            raise
        if not seen.steps or not seen.lrs or len(seen.lrs) > kwargs["num_iter"]:
            fail(f"for valid arguments lr_range_test must run the sweep\n  input: {trial.given()}\n  it returned "
                 f"{len(seen.lrs)} lrs and called optimizer.step() {len(seen.steps)} times (expected "
                 f"{kwargs['num_iter']} iterations, each training one batch)")


@LR_RANGE_TEST.check(points=1)
def geometric_sweep(student: Submission, device: torch.device) -> None:
    """lr_i = start_lr * (end_lr / start_lr) ** (i / (num_iter - 1)), set on every param group before each step."""
    trials = [
        dict(start_lr=1e-4, end_lr=1e-1, num_iter=12),
        dict(start_lr=1e-3, end_lr=1e-2, num_iter=2),
        dict(start_lr=0.3, end_lr=3.7, num_iter=5, smooth=0.5, diverge_threshold=1e9, kind="adam"),
        dict(loss_scale=1e3),  # every default: 1e-7 to 10 in 100 iterations; it diverges at iteration 59
    ]
    for params in trials:
        trial = _Trial(device, batches=105, batch_size=4, **params)
        seen = trial.observe(student)
        lrs, expected = seen.lrs, trial.expected.lrs
        n = min(len(lrs), len(expected))
        if not n or not _close(lrs[:n], expected[:n], _LR_RTOL, 0.0) or len(lrs) > trial.p["num_iter"]:
            fail_mismatch("wrong learning rates", given=trial.given(), got=_short(lrs),
                          expected=_short(expected) + "  (start_lr * (end_lr / start_lr) ** (i / (num_iter - 1)))",
                          where=_first_difference(lrs, expected, _LR_RTOL, 0.0), cause=trial.lr_cause(seen))
        if len(lrs) < len(expected) == trial.p["num_iter"]:
            fail_mismatch("the sweep stopped early, although this run does not diverge", given=trial.given(),
                          expected=f"{len(expected)} iterations", got=f"{len(lrs)} iterations",
                          cause=trial.stop_cause(seen) or trial.loss_cause(seen))
        steps = seen.steps
        others = [s for s in steps if not trial.given_like(s)]
        if others:
            fail(f"optimizer.step() was called on another optimizer ({others[0]['type']} with {others[0]['groups']} "
                 f"param group(s)) than the one given\n  input: {trial.given()}\n  the sweep trains with the "
                 "optimizer it is given (its momentum or Adam state, its param groups), setting each group's lr")
        if len(steps) < len(lrs) or not seen.trained:
            moved = sum(s["moved"] for s in steps)
            fail(f"optimizer.step() ran {len(steps)} times ({moved} of them changed the parameters) for {len(lrs)} "
                 f"recorded iterations\n  input: {trial.given()}\n  every iteration trains one batch: zero grads, "
                 "forward, loss, backward (without it step() has no gradients to apply), step")
        for number, (step, lr) in enumerate(zip(steps, lrs)):
            if not _same(step["lrs"], [lr] * len(step["lrs"])):
                cause = trial.applied_cause(seen) or ("set lr_i on every param group right before iteration i's "
                                                      "optimizer.step(), and record that same lr")
                fail(f"at optimizer.step() number {number} the param groups' lrs were {_short(step['lrs'])}, but "
                     f"the recorded lr is {show_number(lr)}\n  input: {trial.given()}\n  likely cause: {cause}")


@LR_RANGE_TEST.check(points=1)
def smoothed_losses(student: Submission, device: torch.device) -> None:
    """The losses are s_0 = loss_0, s_i = smooth * loss_i + (1 - smooth) * s_(i-1) of the batch losses."""
    for params in (dict(start_lr=1e-4, end_lr=1e-1, num_iter=12, smooth=0.1, stale_grads=True),
                   dict(start_lr=1e-3, end_lr=0.5, num_iter=10, kind="adam"),
                   dict(start_lr=1e-2, end_lr=0.3, num_iter=8, smooth=0.8, diverge_threshold=50.0, learnable=True)):
        trial = _Trial(device, batches=14, batch_size=6, **params)
        trial.expect_run(trial.observe(student), "the recorded losses differ from the specification's run")
    _expect_generated_sweeps(student, device, 8, "a generated call differs from the specification", focus="smooth")


@LR_RANGE_TEST.check(points=1)
def trains_in_train_mode(student: Submission, device: torch.device) -> None:
    """A model handed over in eval mode is swept with every submodule in training mode."""
    trial = _Trial(device, mode="eval", batches=12, batch_size=6, start_lr=1e-3, end_lr=0.3, num_iter=10)
    seen = trial.observe(student)
    off = list(dict.fromkeys(name for flags in seen.modes for name, training in flags.items() if not training))
    if off:
        cause = ("model.training = True changes the top module only: model.train() sets every submodule"
                 if "" not in off else "the model was swept as it came, in eval mode: call model.train() before the "
                                       "sweep (and restore each module's mode afterwards)")
        fail(f"during the sweep {', '.join(_label(n, trial.spec.get('nest', 0)) for n in off)} ran in eval mode\n  input: "
             f"{trial.given()}\n  likely cause: {cause}")
    if not seen.forwards:
        fail(f"the model was never called during the sweep\n  input: {trial.given()}")
    trial.expect_run(seen, "the recorded losses differ from the specification's run")


@LR_RANGE_TEST.check(points=1)
def restarts_short_loader(student: Submission, device: torch.device) -> None:
    """A loader shorter than num_iter is restarted when exhausted (a DataLoader with a short last batch, a list)."""
    for trial in (_Trial(device, batch_size=8, samples=21, start_lr=1e-4, end_lr=0.1, num_iter=10),
                  _Trial(device, batch_size=5, samples=10, loader="list", kind="adam", start_lr=1e-3, end_lr=0.05,
                         num_iter=7)):
        trial.expect_run(trial.observe(student), "the recorded losses differ from the specification's run")
    # A shuffling DataLoader draws a new order at each restart; replaying the first pass (itertools.cycle keeps
    # what it saw) trains on the old order
    _expect_generated_sweeps(student, device, 4, "a generated call differs from the specification", focus="restart")


@LR_RANGE_TEST.check(points=1)
def stops_on_divergence(student: Submission, device: torch.device) -> None:
    """The run stops right after recording the first s_i > diverge_threshold * min(s_0..s_i)."""
    # The second run's loss falls well below s_0 first, then crosses 2 * min: compared with s_0 (or with 5 * min)
    # it stops later or never, and the smoothing is non-default. Both are observed before either is judged, so
    # that a cause for a wrong stop is named only when one mistake explains both (the first alone cannot tell
    # thresholds apart: its loss explodes).
    trials = [_sgd_diverging(device),
              # seed 8: ignoring the threshold stops it where no other threshold does, and the first run tells
              # that apart from comparing with s_0 (an added threshold stops both runs as that does)
              _diverging(device, learnable=True, batches=30, seeds=(8, 3, 0, 1, 2, 4, 5, 6, 7),
                         tells_apart=("first", "default"), start_lr=1e-2, end_lr=100.0, num_iter=60, smooth=0.3,
                         diverge_threshold=2.0)]
    seen = [trial.observe(student) for trial in trials]
    cause = _stop_cause_over(trials, seen)
    for trial, observed, what in zip(trials, seen, ("the diverging run differs from the specification's",
                                                    "a run whose loss falls first, then diverges, differs from "
                                                    "the specification's")):
        trial.expect_run(observed, what, stop_cause=cause)
    _expect_generated_sweeps(student, device, 8, "a generated call differs from the specification",
                             focus="threshold")


_EARLY_EXIT = ("a sweep that ran to num_iter was restored, but this one stopped on divergence and was not: the "
               "early exit skips the restore (a return inside the loop?); break out of the loop, or restore in a "
               "finally: block")


def _restored_model_cause(seen: _Seen, wrong: list[str], full_sweep_restored: bool) -> str | None:
    params = set(seen.before["params"])
    now, end = seen.after["state"], (seen.end or {}).get("state") or {}
    if not any(name in params for name in wrong):
        return ("the parameters were restored but not the buffers (BatchNorm's running_mean, running_var and "
                "num_batches_tracked): snapshot and restore model.state_dict(), which holds both")
    if not all(name in end and now[name].shape == end[name].shape and torch.allclose(
            now[name].double().cpu(), end[name].double().cpu(), rtol=1e-5, atol=1e-7) for name in wrong):
        return None
    if any(seen.loads):
        return ("the snapshot taken before the run shares storage with the live model: model.state_dict() returns "
                "references to the very tensors training updates in place, so load_state_dict put back the "
                "trained values; take copy.deepcopy(model.state_dict()) (or clone each tensor)")
    if full_sweep_restored:
        return _EARLY_EXIT
    return ("the model was left as the run ended: nothing copied the saved values back into it. Assigning the "
            "saved copy to a name (model = saved_model) rebinds your local variable only; the caller's model is "
            "unchanged: copy the values back with model.load_state_dict(saved_state)")


def _expect_model_restored(trial: _Trial, seen: _Seen, what: str, full_sweep_restored: bool = False) -> None:
    if "error" in seen.after:
        fail(f"{what}: the model or optimizer could not be read after the call ({seen.after['error']})\n"
             f"  input: {trial.given()}")
    before, now = seen.before["state"], seen.after["state"]
    if set(now) != set(before):
        fail_mismatch(f"{what}: the model's parameters and buffers are not the same set as before", given=trial.given(),
                      expected=sorted(before), got=sorted(now))
    wrong = [name for name, t in before.items()
             if now[name].dtype != t.dtype or now[name].shape != t.shape or not torch.equal(now[name].cpu(), t.cpu())]
    if wrong:
        name = wrong[0]
        kinds = sum(n in seen.before["params"] for n in wrong)
        fail_mismatch(f"{what}: the model is not exactly as before the call ({kinds} parameter(s), "
                      f"{len(wrong) - kinds} buffer(s) differ, e.g. {name})", given=trial.given(),
                      expected=f"{name} = {show(before[name], 6)}", got=show(now[name], 6),
                      cause=_restored_model_cause(seen, wrong, full_sweep_restored))


@LR_RANGE_TEST.check(points=1)
def restores_parameters_and_buffers(student: Submission, device: torch.device) -> None:
    """Afterwards every parameter and buffer (BatchNorm's running stats too) equals its value before."""
    full = _Trial(device, batches=10, start_lr=1e-3, end_lr=0.5, num_iter=8, diverge_threshold=1e9)
    seen = full.observe(student, restore=True)
    full.expect_trained(seen, "after lr_range_test")
    _expect_model_restored(full, seen, "after lr_range_test")
    trial = _sgd_diverging(device, batches=30)  # the restore must also follow a run that stopped early
    seen = trial.observe(student, restore=True)
    trial.expect_trained(seen, "after lr_range_test")
    _expect_model_restored(trial, seen, "after a run that diverged", full_sweep_restored=True)
    _expect_generated_sweeps(student, device, 6, "a generated call did not restore everything")


@LR_RANGE_TEST.check(points=1)
def restores_training_mode(student: Submission, device: torch.device) -> None:
    """Afterwards every submodule's training flag is as before (from eval mode, and from a frozen BatchNorm)."""
    children_restored = False  # the frozen BatchNorm came back as a direct child: a nested one tells more
    for mode, nest in (("eval", 0), ("mixed", 0), ("mixed", 2)):
        trial = _Trial(device, mode=mode, batches=8, batch_size=6, start_lr=1e-4, end_lr=0.1, num_iter=6, nest=nest)
        seen = trial.observe(student, restore=True)
        trial.expect_trained(seen, "after lr_range_test")
        if mode == "eval" and not any(all(flags.values()) for flags in seen.modes):
            fail(f"the sweep never ran with every module in training mode, so it changed no mode to restore\n"
                 f"  input: {trial.given()}\n  the spec trains in training mode: model.train() before the sweep, "
                 "then each module's own mode restored afterwards")
        if "error" in seen.after:
            fail(f"the model could not be read after the call ({seen.after['error']})\n  input: {trial.given()}")
        before, now = seen.before["modes"], seen.after["modes"]
        if now == before:
            children_restored = children_restored or mode == "mixed"
            continue
        if mode == "eval":
            cause = ("the model was left in training mode (model.train() for the sweep, never undone); record each "
                     "module's .training before the sweep and set it back afterwards")
        elif nest and children_restored:
            cause = ("the modes of the model's direct children were restored, but not those of the modules inside "
                     "them: model.children() lists one level only; record module.training for each of "
                     "model.modules() (every submodule, at every depth) and restore each one")
        elif not nest and now.get("") == before[""] and len(set(now.values())) == 1:
            cause = ("model.train(was_training) set every submodule alike, but the model had its BatchNorm in eval "
                     "mode inside a model in training mode: record module.training for each of model.modules() "
                     "(every submodule) and restore each one")
        else:
            cause = None
        fail_mismatch("the training mode flags are not as before the call", given=trial.given(),
                      expected=", ".join(f"{_label(n, nest)}: training={t}" for n, t in before.items()),
                      got=", ".join(f"{_label(n, nest)}: training={t}" for n, t in now.items()), cause=cause)
    _expect_generated_sweeps(student, device, 4, "a generated call did not restore everything", focus="modes")


def _equal(a: Any, b: Any) -> bool:
    """Exactly the same value (tensors: dtype, shape and every element)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype
                and a.shape == b.shape and torch.equal(a.cpu(), b.cpu()))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_equal(u, v) for u, v in zip(a, b))
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return isinstance(a, bool) == isinstance(b, bool) and bool(a == b)
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - a value whose comparison fails is not the same value
        return False


def _state_difference(before: dict, after: dict) -> str | None:
    """The first difference between two optimizer state_dicts, in words, or None."""
    if set(before["state"]) != set(after["state"]):
        return f"state is kept for params {sorted(after['state'])}, before for {sorted(before['state'])}"
    for index, entries in before["state"].items():
        other = after["state"][index]
        if not isinstance(other, dict) or set(entries) != set(other):
            return f"param {index}'s state is {show(other)}, before it had the keys {sorted(entries)}"
        for key, value in entries.items():
            if not _equal(other[key], value):
                return f"param {index}'s {key} is {show(other[key], 6)}, was {show(value, 6)}"
    if len(before["param_groups"]) != len(after["param_groups"]):
        return f"{len(after['param_groups'])} param groups, before {len(before['param_groups'])}"
    for number, (group, other) in enumerate(zip(before["param_groups"], after["param_groups"])):
        for key, value in group.items():
            if not isinstance(other, dict):
                return f"param group {number} is {show(other)}"
            if key not in other or not _equal(other[key], value):
                return f"param group {number}'s {key} is {show(other.get(key))}, was {show(value)}"
    return None


def _expect_optimizer_restored(trial: _Trial, seen: _Seen, full_sweep_restored: bool = False) -> None:
    if "error" in seen.after:
        fail(f"the optimizer could not be read after the call ({seen.after['error']})\n  input: {trial.given()}")
    if not any(s["moved"] and trial.given_like(s) for s in seen.steps):
        fail(f"the optimizer given (or a copy of it) never trained the model, so there was nothing to restore\n"
             f"  input: {trial.given()}\n  the sweep trains with the optimizer it is given")
    if not seen.after["optimizer_on_model"]:
        fail("after lr_range_test the optimizer holds tensors that are not the model's parameters, so it no "
             f"longer trains the model\n  input: {trial.given()}\n  likely cause: parameters replaced by new "
             "tensors (e.g. module.weight = nn.Parameter(...)); restore values in place with model.load_state_dict")
    before, after = seen.before["optimizer"], seen.after["optimizer"]
    before_lrs = [g["lr"] for g in before["param_groups"]]
    after_lrs = [g.get("lr") for g in after["param_groups"]]
    if not _equal(after_lrs, before_lrs):
        if all(isinstance(v, float) and any(math.isclose(v, lr, rel_tol=_LR_RTOL) for lr in seen.lrs)
               for v in after_lrs):
            cause = _EARLY_EXIT if full_sweep_restored else (
                "the learning rates were not restored: the param groups keep an lr of the sweep; restore them "
                "(optimizer.load_state_dict of a deep copy of the state_dict taken before restores lrs and state)")
        elif len(set(map(repr, after_lrs))) == 1:
            cause = "each param group has its own lr: restore each group's own, not one value for all"
        else:
            cause = None
        fail_mismatch("the param groups' learning rates are not as before the call", given=trial.given(),
                      expected=_short(before_lrs), got=_short(after_lrs), cause=cause)
    difference = _state_difference(before, after)
    if difference is None:
        return
    end = (seen.end or {}).get("optimizer")
    if not after["state"]:
        cause = "the optimizer state was cleared (state.clear() or a fresh optimizer); restore the saved state"
    elif end is not None and _state_difference({"state": end, "param_groups": []},
                                                {"state": after["state"], "param_groups": []}) is None:
        cause = _EARLY_EXIT if full_sweep_restored else (
            "the optimizer state (Adam's exp_avg, exp_avg_sq and step; SGD's momentum buffers) was not restored: it "
            "is what the run left. Take copy.deepcopy(optimizer.state_dict()) before the run (state_dict() alone "
            "shares the live state tensors) and optimizer.load_state_dict it afterwards")
    else:
        cause = None
    fail_mismatch("the optimizer state is not exactly as before the call", given=trial.given(),
                  expected="the state_dict() from before the call", got=difference, cause=cause)


@LR_RANGE_TEST.check(points=1)
def restores_optimizer(student: Submission, device: torch.device) -> None:
    """Afterwards the optimizer's state (momentum buffers, Adam's moments and step) and group lrs are as before."""
    full = _Trial(device, kind="sgd", batches=10, start_lr=1e-3, end_lr=0.5, num_iter=8, diverge_threshold=1e9)
    seen = full.observe(student, restore=True)
    full.expect_trained(seen, "after lr_range_test")
    _expect_optimizer_restored(full, seen)
    trial = _diverging(device, kind="adam", batches=30, start_lr=1e-3, end_lr=1e3, num_iter=30)
    seen = trial.observe(student, restore=True)
    trial.expect_trained(seen, "after lr_range_test")
    _expect_optimizer_restored(trial, seen, full_sweep_restored=True)


# ==================================================================================================
# suggest_lr
# ==================================================================================================
def _loss_curve(rng: random.Random, n: int, *, steep_at: int, noise: float = 0.02) -> tuple[list[float], list[float]]:
    """A noisy range-test-like curve on a geometric lr grid, falling fastest near ``steep_at``."""
    lrs = [1e-6 * (1e1 / 1e-6) ** (i / max(n - 1, 1)) for i in range(n)]
    losses = [2.5 - 1.5 / (1 + math.exp(-(i - steep_at) * 1.3)) + 0.02 * max(0, i - steep_at - 4) ** 2
              + rng.uniform(-noise, noise) for i in range(n)]
    return lrs, losses


def _trimmed(values: Sequence[float], skip_start: int, skip_end: int) -> list[float]:
    return list(values)[skip_start:max(len(values) - skip_end, 0)]


@judge_only
def _steepest_lrs(lrs: list[float], losses: list[float], skip_start: int, skip_end: int) -> list[float]:
    """Every lr where numpy.gradient of the trimmed losses is most negative: when several points share that
    gradient the specification does not say which one is meant, so each is right."""
    gradient = np.gradient(np.array(_trimmed(losses, skip_start, skip_end), dtype=np.float64))
    return [lrs[skip_start + int(j)] for j in np.flatnonzero(gradient == gradient.min())]


@judge_only
def _accepted(lrs: list[float], losses: list[float], skip_start: int, skip_end: int) -> tuple[bool, list[float]]:
    """(ValueError is right, the lrs that are right). When skip_end is larger than len(losses), the specification's
    slice losses[skip_start : len(losses) - skip_end] has a negative stop: read as "nothing left after trimming"
    (the reference) it raises; read as Python slices it (counting from the end) it may leave points. The
    specification does not say which is meant, so both are right there."""
    may_raise = len(_trimmed(losses, skip_start, skip_end)) < 2
    values = _steepest_lrs(lrs, losses, skip_start, skip_end) if not may_raise else []
    stop = len(losses) - skip_end
    if stop < 0:
        literal = losses[skip_start:stop]
        if len(literal) < 2:
            may_raise = True
        else:
            gradient = np.gradient(np.array(literal, dtype=np.float64))
            values += [lrs[skip_start + int(j)] for j in np.flatnonzero(gradient == gradient.min())]
    return may_raise, values


@judge_only
def _expected_suggestion(lrs: list[float], losses: list[float], skip_start: int, skip_end: int) -> float:
    kept = np.array(_trimmed(losses, skip_start, skip_end), dtype=np.float64)
    return lrs[skip_start + int(np.argmin(np.gradient(kept)))]


@judge_only
def _known_suggestions(lrs: list[float], losses: list[float], skip_start: int, skip_end: int) -> dict[str, Any]:
    """What known mistakes return on this input, by the words that name them."""
    kept = np.array(_trimmed(losses, skip_start, skip_end), dtype=np.float64)
    kept_lrs = np.array(_trimmed(lrs, skip_start, skip_end), dtype=np.float64)
    k = int(np.argmin(np.gradient(kept)))
    return {
        "that is the index of the steepest point; return the learning rate there, lrs[index]":
            ("index", k, skip_start + k),
        "that is the lr at the lowest loss; the spec asks for the steepest fall: the most negative numpy.gradient of "
        "the losses": lrs[skip_start + int(np.argmin(kept))],
        "skip_start / skip_end were not applied: take numpy.gradient of losses[skip_start : len(losses) - skip_end] "
        "only": lrs[int(np.argmin(np.gradient(np.array(losses, dtype=np.float64))))],
        "the index found in the trimmed slice was used on the untrimmed lrs; the lr is lrs[skip_start + index] (trim "
        "lrs the same way as losses)": lrs[k],
        "np.diff (forward differences) instead of numpy.gradient (central differences)":
            lrs[skip_start + int(np.argmin(np.diff(kept)))],
        "that is the most POSITIVE gradient (argmax); the spec takes the most negative (argmin)":
            lrs[skip_start + int(np.argmax(np.gradient(kept)))],
        "numpy.gradient(losses, lrs) differentiates with respect to the lr; the spec takes numpy.gradient of the "
        "losses alone (unit spacing: the lrs are evenly spaced in log)":
            lrs[skip_start + int(np.argmin(np.gradient(kept, kept_lrs)))],
        "that is the right lr rounded to float32; return the Python float from lrs itself":
            ("float32", lrs[skip_start + k]),
    }


def _is(got: Any, known: Any) -> bool:
    """Would a student making that mistake have returned ``got``?"""
    if isinstance(known, tuple) and known[0] == "index":
        return isinstance(got, numbers.Integral) and not isinstance(got, bool) and int(got) in known[1:]
    if isinstance(known, tuple):  # float32
        return isinstance(got, np.float32) and got == np.float32(known[1])
    return (isinstance(got, numbers.Real) and not isinstance(got, bool)
            and math.isclose(float(got), known, rel_tol=1e-12))


def _suggest_text(lrs: list[float], skips: dict) -> str:
    return f"suggest_lr(lrs, losses{''.join(f', {k}={v}' for k, v in skips.items())}) with {len(lrs)} points"


def _call_suggest(student: Submission, lrs: list[float], losses: list[float], skips: dict) -> Any:
    """What suggest_lr returned; a ValueError it raised is returned too (as the StudentCodeError), to be judged
    with the answers to the other cases (_expect_suggestions); anything else it raised fails here."""
    call = _suggest_text(lrs, skips)
    try:
        got = student.call("suggest_lr", lrs, losses, **skips)
    except StudentCodeError as exc:
        if exc.error.is_instance(ValueError):
            return exc
        raise exc.within(call) from None
    if isinstance(got, (torch.Tensor, np.ndarray)):
        fail(f"{call} returned a {type_name(got)} ({show(got)}); it must return the learning "
             "rate as a Python float: float(lrs[index]) (the lrs are a list of floats; converting them to a float32 "
             "tensor also loses precision)")
    return got


@judge_only
def _raising_mistakes(losses: list[float], skip_start: int, skip_end: int) -> dict[str, bool]:
    """Catalogued mistakes that raise ValueError although 2 or more points remain: whether each raises on this
    input (where it does not, its answer is the specification's)."""
    return {
        "losses[skip_start:-skip_end] is empty when skip_end == 0 (-0 is 0); slice up to len(losses) - skip_end":
            len(list(losses)[skip_start:-skip_end]) < 2,
        "the test must be 'fewer than 2', not 'fewer than 3'": len(_trimmed(losses, skip_start, skip_end)) < 3,
    }


def _expect_suggestions(student: Submission, cases: list, what: str) -> None:
    """Every case's answer is lrs at the most negative numpy.gradient of the trimmed losses.

    All cases are answered first: a mistake is named only when it explains the answer to every case (one
    input alone often gives the same lr, or the same ValueError, for several mistakes: a ValueError on
    skip_start=0, skip_end=0 fits both "-skip_end" and a slice that starts one point early).
    """
    answers = [_call_suggest(student, lrs, losses, skips) for (lrs, losses), skips in cases]
    wrong = None
    explained: dict[str, bool] = {}
    for ((lrs, losses), skips), got in zip(cases, answers):
        skip_start, skip_end = skips.get("skip_start", 10), skips.get("skip_end", 5)
        expected = _expected_suggestion(lrs, losses, skip_start, skip_end)
        right = isinstance(got, float) and math.isclose(got, expected, rel_tol=1e-12)
        for cause, known in _known_suggestions(lrs, losses, skip_start, skip_end).items():
            explained[cause] = explained.get(cause, True) and _is(got, known)
        raised = isinstance(got, StudentCodeError)
        for cause, raises in _raising_mistakes(losses, skip_start, skip_end).items():
            explained[cause] = explained.get(cause, True) and (raised if raises else right)
        if not right and wrong is None:
            wrong = (lrs, losses, skips, got, expected)
    if wrong is None:
        return
    lrs, losses, skips, got, expected = wrong
    skip_start, skip_end = skips.get("skip_start", 10), skips.get("skip_end", 5)
    call = _suggest_text(lrs, skips)
    if isinstance(got, StudentCodeError):
        causes = [cause for cause in _raising_mistakes(losses, skip_start, skip_end) if explained[cause]]
        remain = len(_trimmed(losses, skip_start, skip_end))
        fail(f"{call} raised ValueError although {remain} points remain after trimming\n  {got.error.describe()}"
             + (f"\n  likely cause: {causes[0]}" if len(causes) == 1 else ""))
    known = _known_suggestions(lrs, losses, skip_start, skip_end)
    causes = [cause for cause, value in known.items() if explained[cause] and not _is(expected, value)]
    left = len(_trimmed(losses, skip_start, skip_end))
    fail_mismatch(what, given=f"{call} ({left} remain after trimming); lrs = {_short(lrs, 4)}, "
                              f"losses = {_short(losses, 4)}",
                  expected=f"{show_number(expected)} (lrs[{lrs.index(expected)}])",
                  got=f"{show(got)} ({type_name(got)})",
                  cause=" OR ".join(causes) if causes else None)


@LR_RANGE_TEST.check(points=1)
def suggest_lr_steepest_descent(student: Submission, device: torch.device) -> None:
    """suggest_lr returns the lr at the most negative numpy.gradient of losses[skip_start : len - skip_end]."""
    rng = random.Random(404)
    steep_in_both_skipped_ends = _loss_curve(rng, 40, steep_at=5, noise=0.01)
    steep_in_both_skipped_ends[1][-3] -= 5.0  # a sudden fall inside the last skip_end points as well
    cases = [
        (_loss_curve(rng, 40, steep_at=20), {}),  # the defaults: skip_start=10, skip_end=5
        (steep_in_both_skipped_ends, {}),
        (_loss_curve(rng, 30, steep_at=14), dict(skip_start=3, skip_end=2)),
        (_loss_curve(rng, 12, steep_at=6), dict(skip_start=0, skip_end=0)),
        (_loss_curve(rng, 25, steep_at=9, noise=0.2), dict(skip_start=2, skip_end=0)),
        (_loss_curve(rng, 300, steep_at=150, noise=0.001), dict(skip_start=100, skip_end=20)),
    ]
    _expect_suggestions(student, cases, "suggest_lr picked the wrong learning rate")
    _expect_generated_suggestions(student, 300, "suggest_lr picked the wrong learning rate", valid=True)


@LR_RANGE_TEST.check(points=1)
def suggest_lr_too_few_points(student: Submission, device: torch.device) -> None:
    """suggest_lr raises ValueError when fewer than 2 points remain after trimming, and not when 2 do."""
    rng = random.Random(5)
    too_few = []
    for n, skips, why in [(16, {}, "only 1 point remains (16 - 10 - 5)"),
                          (12, {}, "no point remains (12 - 10 - 5 < 0)"),
                          (5, dict(skip_start=0, skip_end=4), "only 1 point remains"),
                          (3, dict(skip_start=2, skip_end=0), "only 1 point remains"),
                          (0, dict(skip_start=0, skip_end=0), "there are no points at all")]:
        lrs, losses = _loss_curve(rng, max(n, 2), steep_at=n // 2)
        too_few.append(ErrorCase((lrs[:n], losses[:n]), _suggest_text(lrs[:n], skips), why, kwargs=skips))
    expect_errors(student, ValueError, "suggest_lr", too_few,
                  missing_check="no check of how many points remain after trimming: none of these calls raised")
    # Exactly 2 points left, then 3: a mistake that refuses 2 ('fewer than 3') answers 3 right, while a slice that
    # starts one point late (refusing 2 as well) does not; without the 3s no cause could be named for either.
    cases = [(_loss_curve(rng, n, steep_at=n // 2), skips) for n, skips in
             [(17, {}), (2, dict(skip_start=0, skip_end=0)), (6, dict(skip_start=4, skip_end=0)),
              (9, dict(skip_start=3, skip_end=4)), (18, {}), (3, dict(skip_start=0, skip_end=0)),
              (8, dict(skip_start=1, skip_end=4))]]
    _expect_suggestions(student, cases, "suggest_lr picked the wrong learning rate with few points left")
    _expect_generated_suggestions(student, 200, "suggest_lr, with few points (or none) left after trimming", valid=None)


# ==================================================================================================
# Generated cases: the specification's whole domain (issue 32)
# ==================================================================================================
def _draw_losses(rng: random.Random, n: int, kind: str, first: int, stop: int) -> list[float]:
    """n losses: a range-test curve, uniform noise, few distinct values (equal gradients: the first one counts),
    a steepest fall at the first or the last point kept, or magnitudes far from 1 (tiny, huge, negative)."""
    if kind == "curve":
        return _loss_curve(rng, n, steep_at=rng.randint(0, max(n - 1, 0)), noise=rng.choice([0.0, 0.01, 0.3]))[1]
    if kind == "ties":
        return [float(rng.choice([1, 2, 3])) for _ in range(n)]
    losses = [rng.uniform(0.5, 3.0) for _ in range(n)]
    if kind in ("steep_last", "steep_first") and stop - first >= 2:
        at = stop - 1 if kind == "steep_last" else first
        losses[at] -= 10.0 if kind == "steep_last" else -10.0  # the first point: a rise just after it
        if kind == "steep_first":
            losses[at] = losses[at + 1] + 10.0
    if kind == "scaled":
        scale = rng.choice([1e-30, 1e30, -1.0, 1e-300])
        losses = [v * scale for v in losses]
    return losses


def draw_suggest_case(rng: random.Random, *, valid: bool | None = None) -> tuple[list[float], list[float], dict]:
    """(lrs, losses, keyword arguments) of a suggest_lr call: any length; skip_start and skip_end omitted (their
    defaults 10 and 5), 0, or in every relation to the length: 2, 1, 0 points left, skip_end past the length,
    skip_start past it; lrs a geometric grid or any increasing floats, as a list or a tuple. ``valid``: only
    cases that leave at least 2 points (True), or fewer (False)."""
    n = domain.pick(rng, [domain.small_int(rng, 0, 20), rng.randint(21, 60), rng.randint(100, 300)],
                    weights=[5, 3, 1])
    while True:
        skip_start = domain.pick(rng, [10, 0, 1, domain.small_int(rng, 0, 12), rng.randint(0, n + 3)])
        remain = domain.pick(rng, [2, 1, 0, -rng.randint(1, 5), 3, rng.randint(2, max(n, 2))])
        skip_end = n - skip_start - remain
        if skip_end < 0:
            skip_end = domain.pick(rng, [5, 0, rng.randint(0, 4)])
        if rng.random() < 0.1:
            skip_start, skip_end = rng.choice([(0, n + rng.randint(2, 9)), (n + rng.randint(0, 4), 0)])
        left = len(list(range(n))[skip_start:max(n - skip_end, 0)])
        if valid is None or (left >= 2) == valid:
            break
        n = max(n, domain.small_int(rng, 2, 30))
    kind = domain.pick(rng, ["curve", "uniform", "ties", "steep_last", "steep_first", "scaled"],
                       weights=[4, 2, 2, 2, 1, 1])
    losses = _draw_losses(rng, n, kind, skip_start, max(n - skip_end, 0))
    if rng.random() < 0.7:
        low, decades = 10 ** rng.uniform(-9, -3), rng.uniform(1, 9)
        lrs = [low * 10 ** (decades * i / max(n - 1, 1)) for i in range(n)]
    else:
        lrs = list(itertools.accumulate(rng.uniform(1e-6, 1.0) for _ in range(n)))
    kwargs = {}
    if skip_start != 10 or rng.random() < 0.5:
        kwargs["skip_start"] = skip_start
    if skip_end != 5 or rng.random() < 0.5:
        kwargs["skip_end"] = skip_end
    container = rng.choice([list, list, tuple])
    return container(lrs), container(losses), kwargs


def suggest_case_size(case: tuple) -> tuple:
    lrs, losses, kwargs = case
    return (len(losses), sum(kwargs.values()), len(kwargs))


def suggest_many(student: RunnerStudent, cases: list[tuple]) -> list[dict]:
    """suggest_lr on every case: what it returned, or the facts of what it raised."""
    function = student.get("suggest_lr")
    seen = []
    for lrs, losses, kwargs in cases:
        try:
            seen.append({"value": student.run(function, lrs, losses, **kwargs)})
        except StudentRaised as exc:
            seen.append({"raised": dataclasses.asdict(exc.error)})
    return seen


def _suggest_call(case: tuple) -> str:
    lrs, losses, kwargs = case
    shown = "".join(f", {k}={v}" for k, v in kwargs.items())
    return (f"suggest_lr(lrs, losses{shown}) with {len(losses)} points ({type(lrs).__name__}s); "
            f"lrs = {_short(lrs, 4)}, losses = {_short(losses, 4)}")


def _expect_generated_suggestions(student: Submission, count: int, what: str, *, valid: bool | None) -> None:
    """``count`` generated suggest_lr calls in one request; the smallest failing one is reported, with a cause
    only when the same catalogued mistake explains every failing answer."""
    cases = domain.draw(functools.partial(draw_suggest_case, valid=valid), count, size=suggest_case_size)
    seen = [s for first in range(0, len(cases), 300) for s in student.scenario(suggest_many, cases[first:first + 300])]
    failing = []
    for case, observed in zip(cases, seen):
        lrs, losses, kwargs = case
        skip_start, skip_end = kwargs.get("skip_start", 10), kwargs.get("skip_end", 5)
        remain = len(_trimmed(losses, skip_start, skip_end))
        may_raise, values = _accepted(list(lrs), list(losses), skip_start, skip_end)
        if "raised" in observed:
            bad = not (may_raise and StudentError(**observed["raised"]).is_instance(ValueError))
        else:
            got = observed.get("value")
            bad = not (isinstance(got, float) and any(math.isclose(got, lr, rel_tol=1e-12) for lr in values))
        if bad:
            failing.append((case, observed, remain))
    if not failing:
        return
    case, observed, remain = failing[0]  # the cases are drawn smallest first
    lrs, losses, kwargs = case
    call = _suggest_call(case)
    heading = f"{what} (the smallest of {len(failing)} failing generated calls, out of {len(cases)})"
    if remain < 2 and not _accepted(list(lrs), list(losses), kwargs.get("skip_start", 10),
                                    kwargs.get("skip_end", 5))[1]:
        if "raised" in observed:
            error = StudentError(**observed["raised"])
            fail(f"{heading}: {call} raised {error.describe()}; expected ValueError: only {remain} point(s) remain "
                 "after trimming" if remain > 0 else f"{heading}: {call} raised {error.describe()}; expected "
                 "ValueError: no point remains after trimming")
        fail(f"{heading}: {call} returned {show(observed['value'])}; expected ValueError, because only "
             f"{max(remain, 0)} point(s) remain in losses[skip_start : len(losses) - skip_end] (fewer than 2)")
    if "raised" in observed:
        error = StudentError(**observed["raised"])
        if error.is_instance(ValueError):
            fail(f"{heading}: {call} raised ValueError although {remain} points remain after trimming\n  "
                 f"{error.describe()}")
        raise StudentCodeError(error).within(call) from None
    got = observed["value"]
    if isinstance(got, (torch.Tensor, np.ndarray)):
        fail(f"{heading}: {call} returned a {type_name(got)} ({show(got)}); it must return the learning rate as a "
             "Python float")
    explained: dict[str, bool] = {}
    for (l, s, k), o, left in failing:
        if "value" not in o or left < 2:  # no catalogued mistake is judged where the trimming is ambiguous
            explained = {}
            break
        for cause, known in _known_suggestions(list(l), list(s), k.get("skip_start", 10), k.get("skip_end", 5)).items():
            explained[cause] = explained.get(cause, True) and _is(o["value"], known)
    skip_start, skip_end = kwargs.get("skip_start", 10), kwargs.get("skip_end", 5)
    expected = _accepted(list(lrs), list(losses), skip_start, skip_end)[1][0]
    known = _known_suggestions(list(lrs), list(losses), skip_start, skip_end) if explained else {}
    causes = [cause for cause, value in known.items() if explained.get(cause) and not _is(expected, value)]
    fail_mismatch(heading, given=call, expected=f"{show_number(expected)} (lrs[{list(lrs).index(expected)}])",
                  got=f"{show(got)} ({type_name(got)})", cause=causes[0] if len(causes) == 1 else None)


def draw_sweep(rng: random.Random, focus: str = "") -> dict:
    """One lr_range_test call: the objects (SGD with momentum or Adam, 3 param groups with state; a model in
    training mode, in eval mode, or training with a frozen BatchNorm, that BatchNorm a direct child or one or two
    Sequentials deeper; gradients left in .grad before the call or none; a DataLoader, in order or shuffling (each
    restart a new order), with a short last batch or not, or a list; fewer batches than iterations or more; labels it can learn or not; a loss scaled to
    diverge sooner, or shifted below 0) and the keyword arguments in every relation the specification allows:
    end_lr just above start_lr or decades above it, num_iter 2 and more, smooth 0 (the first loss kept), 1 (no
    smoothing) or between, diverge_threshold below 1 (positive losses stop at s_0), 1 (stop at the first rise),
    just above 1, 5 or never; each omitted (its default) now and then. The divergence test is the
    specification's, min(s_0..s_i) with s_i in it: a threshold below 1, or a loss below 0, tells it from a test
    against the earlier losses only."""
    batches = domain.small_int(rng, 2, 6)  # BatchNorm trains on batches of 2 or more (_build warms up on two)
    batch_size = rng.randint(2, 6)
    objects = dict(seed=rng.randint(0, 10**6), kind=rng.choice(["sgd", "adam"]),
                   mode=domain.pick(rng, ["train", "eval", "mixed"]), batch_size=batch_size,
                   samples=batches * batch_size - domain.pick(rng, [0, 0, rng.randint(0, batch_size - 2)]),
                   learnable=rng.random() < 0.5, loader=domain.pick(rng, ["dataloader", "list", "shuffled"]),
                   loss_scale=domain.pick(rng, [1, 1, 100, 1e3, 0.5]),
                   loss_shift=domain.pick(rng, [0.0, -10.0, -rng.uniform(0.5, 3)], weights=[6, 1, 1]),
                   stale_grads=rng.random() < 0.25, nest=domain.pick(rng, [0, 1, 2], weights=[2, 1, 1]))
    start = domain.pick(rng, [1e-7, 1e-4, 1e-3, 0.01, 0.3, 10 ** rng.uniform(-8, 0)])
    end = domain.pick(rng, [start * (1 + 1e-6), start * rng.uniform(1.5, 10), start * 10 ** rng.uniform(1, 7), 10.0])
    end = max(end, start * (1 + 1e-6))
    params = dict(start_lr=start, end_lr=end, num_iter=domain.pick(rng, [2, 3, domain.small_int(rng, 2, 10)]),
                  smooth=domain.pick(rng, [0.05, 0.0, 1.0, rng.uniform(0, 1), 0.5]),
                  diverge_threshold=domain.pick(rng, [5.0, 1.0, 1.0 + 1e-9, rng.uniform(1, 3), 1e9,
                                                      rng.uniform(0.1, 0.95)], weights=[2, 2, 1, 3, 1, 1]))
    for name in list(params):
        if rng.random() < 0.15 and name != "num_iter":
            params[name] = DEFAULTS[name]
    if params["end_lr"] <= params["start_lr"]:
        params["end_lr"] = params["start_lr"] * 10
    if focus == "smooth":  # the ends of smooth: 0 keeps s_0 throughout, 1 records the raw losses
        params["smooth"] = domain.pick(rng, [0.0, 1.0, rng.uniform(0, 1)], weights=[2, 2, 1])
    if focus == "threshold":  # stop at the first rise above the minimum, just above it, at once, or below 0
        params["diverge_threshold"] = domain.pick(rng, [1.0, 1.0 + 1e-9, rng.uniform(1, 1.5), rng.uniform(0.1, 0.95),
                                                        rng.uniform(1.5, 6)])
        if rng.random() < 0.4:
            objects["loss_shift"] = domain.pick(rng, [-10.0, -rng.uniform(0.5, 3)])
    if focus == "restart":  # more iterations than batches, a new order at each pass
        objects["loader"] = "shuffled"
        objects["samples"] = max(2, objects["samples"])
        params["num_iter"] = rng.randint(batches + 2, 3 * batches + 2)
        params["diverge_threshold"] = 1e9
    if focus == "modes":  # a frozen BatchNorm below the model's children, or a model handed over in eval mode
        objects["mode"] = domain.pick(rng, ["mixed", "eval"], weights=[3, 1])
        objects["nest"] = domain.pick(rng, [1, 2])
    given = {name: value for name, value in params.items() if value != DEFAULTS[name] or rng.random() < 0.5}
    return {"objects": objects, "params": given}


def sweep_size(case: dict) -> tuple:
    params = {**DEFAULTS, **case["params"]}
    objects = case["objects"]
    return (params["num_iter"], objects["samples"], objects["mode"] != "train", objects["kind"] != "sgd")


def _sweeps(student: RunnerStudent, cases: list[dict], device: str) -> list[dict]:
    """:func:`_sweep` (with the restore observations) on every case; what the student's code raised, as facts."""
    seen = []
    for case in cases:
        spec = _spec(**{k: v for k, v in case["objects"].items() if k != "samples"}, samples=case["objects"]["samples"])
        try:
            seen.append(_sweep(student, spec, case["params"], device, True))
        except StudentRaised as exc:
            seen.append({"raised": dataclasses.asdict(exc.error)})
    return seen


def _trial_of(case: dict, device: torch.device) -> _Trial:
    return _Trial(device, **case["objects"], **case["params"])


@judge_only
def _sweep_failure(trial: _Trial, observed: dict) -> str | None:
    """The failure message for this generated sweep (the first thing wrong, as the hand-written checks say it),
    or None when the call did what the specification says."""
    try:
        if "raised" in observed:
            error = StudentError(**observed["raised"])
            fail(f"lr_range_test {error.describe()}\n  input: {trial.given()}")
        lrs, losses = _parse(observed["got"])
        seen = _Seen(lrs, losses, _unpack_steps(observed["steps"]), observed["forwards"], observed["modes"],
                     observed["loads"], observed["before"], observed["after"], observed["end"])
        trial.expect_run(seen, "the run differs from the specification's")
        for number, (step, lr) in enumerate(zip(seen.steps, seen.lrs)):
            if not _same(step["lrs"], [lr] * len(step["lrs"])):
                fail(f"at optimizer.step() number {number} the param groups' lrs were {_short(step['lrs'])}, but "
                     f"the recorded lr is {show_number(lr)}\n  input: {trial.given()}")
        if len(seen.steps) < len(seen.lrs):
            fail(f"optimizer.step() ran {len(seen.steps)} times for {len(seen.lrs)} recorded iterations\n"
                 f"  input: {trial.given()}")
        trial.expect_trained(seen, "after lr_range_test")
        _expect_model_restored(trial, seen, "after lr_range_test")
        if seen.after["modes"] != seen.before["modes"]:
            fail_mismatch("the training mode flags are not as before the call", given=trial.given(),
                          expected=", ".join(f"{_label(n, trial.spec.get('nest', 0))}: training={t}"
                                             for n, t in seen.before["modes"].items()),
                          got=", ".join(f"{_label(n, trial.spec.get('nest', 0))}: training={t}"
                                        for n, t in seen.after["modes"].items()))
        _expect_optimizer_restored(trial, seen)
    except CheckFailed as failed:
        return str(failed)
    return None


def _expect_generated_sweeps(student: Submission, device: torch.device, count: int, what: str,
                             focus: str = "") -> None:
    """``count`` generated calls (8 a request); the smallest failing one is reported as its hand-written
    equivalent would be, its likely cause kept only when every failing call gives the same one."""
    cases = domain.draw(functools.partial(draw_sweep, focus=focus), count, size=sweep_size)
    seen = [s for first in range(0, len(cases), 8)  # a request each 8 calls: each stays far within its time limit
            for s in student.scenario(_sweeps, cases[first:first + 8], str(device))]
    failures = [(case, message) for case, observed in zip(cases, seen)
                if (message := _sweep_failure(_trial_of(case, device), observed)) is not None]
    if not failures:
        return
    case, message = failures[0]  # drawn smallest first
    if "raised" in seen[cases.index(case)]:
        error = StudentError(**seen[cases.index(case)]["raised"])
        raise StudentCodeError(error).within(_trial_of(case, device).given()) from None
    causes = {re.sub(r"-?[\d.]+(e-?\d+)?", "#", line) for _, text in failures
              for line in text.splitlines()[-1:] if line.lstrip().startswith("likely cause:")}
    confirmed = len(causes) == 1 and all("likely cause:" in text for _, text in failures)
    lines = [line for line in message.splitlines() if confirmed or not line.lstrip().startswith("likely cause:")]
    fail(f"{what} (the smallest of {len(failures)} failing generated calls, out of {len(cases)}): " + "\n".join(lines))
