"""RunningNorm(num_features, momentum=0.1, eps=1e-5): nn.BatchNorm1d(affine=False), written by hand.

The student's module lives only in the runner. The scenarios below build it, feed it batches in training
and eval mode, move it with ``.to()`` / ``.double()``, run backward, watch the torch functions it calls,
and return what they saw: outputs, copies of the buffers after every step, names, dtypes, devices and
autograd facts. The judge runs ``nn.BatchNorm1d(affine=False)`` on its own copies of the same batches
(for eval mode: a BatchNorm1d holding the very running statistics the student's module returned) and
compares. Known mistakes are named by comparing with what a known wrong computation gives.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from graders.ch03_modules.glu import (
    Live,
    Seen,
    call_text,
    check_tensor_output,
    constructor_hint,
    first_cause,
    grad_facts,
    observe,
    observe_chunks,
    observing,
    snap,
)
from graders.compare import (close, describe_tensor, difference, dtype_name, one_torch_thread, show, show_number,
                             type_name)
from graders.outcomes import CheckFailed, StudentError, fail, fail_mismatch
from graders.registry import exercise
from graders.student import Submission
from graders.watch import torch_calls

RUNNING_NORM_EXERCISE = exercise("running_norm", chapter="03_modules", names=["RunningNorm"])
_BUFFERS = ("running_mean", "running_var", "num_batches_tracked")
_OUT_RTOL, _OUT_ATOL = 1e-6, 1e-9  # float64 throughout: every known mistake is off by 1% or far more
_BUF_RTOL, _BUF_ATOL = 1e-6, 1e-12  # running_var of a feature with std 1e-3 is about 1e-6


# ==================================================================================================
# Inside the runner
# ==================================================================================================
def _buffer_text(module: nn.Module, name: str) -> str:
    if not hasattr(module, name):
        return "missing"
    value = getattr(module, name)
    return show(value) if value is None or isinstance(value, (int, float, str, bool)) else f"a {type(value).__name__}"


def _buffers_now(live: Live, module: nn.Module, label: str) -> dict[str, Any]:
    """Copies of the three buffers as they are now (a text for one that is not a tensor)."""
    found = {}
    for name in _BUFFERS:
        value = live.run(f"reading {label}.{name}", getattr, module, name, None)
        found[name] = snap(value) if isinstance(value, torch.Tensor) else live.run(
            f"reading {label}.{name}", _buffer_text, module, name)
    return found


def _label(args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> str:
    return call_text("RunningNorm", args, kwargs)


def _build_norm(live: Live, args: Sequence[Any], kwargs: dict[str, Any] | None, device: torch.device) -> nn.Module:
    """RunningNorm(*args, **kwargs).to(device).double(), as the student's code does it."""
    label = _label(args, kwargs)
    module = live.build("RunningNorm", args, kwargs)
    live.run(f"{label}.to({device.type!r})", module.to, device)
    live.run(f"{label}.double()", module.double)
    return module


def _forward(live: Live, module: nn.Module, label: str, x: torch.Tensor, mode: str = "training mode") -> Any:
    return live.run(f"{label}(x = {describe_tensor(x)}) in {mode}", module, x)


def _record_signature(live: Live) -> None:
    try:
        parameters = list(inspect.signature(live.student.get("RunningNorm")).parameters)
    except (TypeError, ValueError):  # a signature Python cannot read: no note
        parameters = []
    live.seen["signature"] = [str(p) for p in parameters]


@observing
def _train_runs(live: Live, runs: list[tuple[tuple, dict, list[torch.Tensor]]], device: torch.device) -> None:
    """For each (args, kwargs, batches): RunningNorm(*args, **kwargs).to(device).double(), then one training
    step per batch, recording the output and the buffers after each step."""
    _record_signature(live)
    for r, (args, kwargs, batches) in enumerate(runs):
        label = _label(args, kwargs)
        module = _build_norm(live, args, kwargs, device)
        for i, x in enumerate(batches):
            out = _forward(live, module, label, x)
            live.seen[f"{r}.{i}.out"] = snap(out)
            live.seen[f"{r}.{i}.buffers"] = _buffers_now(live, module, label)


# ==================================================================================================
# In the judge
# ==================================================================================================
def _norm_batches(num_features: int, sizes: Sequence[int]) -> list[torch.Tensor]:
    """float64 batches whose features have stds from 1e-3 (variance far below eps=1e-5) to about 2."""
    scale = torch.logspace(-3, 0.3, num_features, dtype=torch.float64)[torch.randperm(num_features)]
    shift = torch.rand(num_features, dtype=torch.float64) - 0.5
    return [torch.randn(n, num_features, dtype=torch.float64) * scale + shift for n in sizes]


def _state(module: nn.Module) -> dict[str, torch.Tensor]:
    return {name: getattr(module, name).detach().clone().cpu() for name in _BUFFERS}


def _batchnorm_trace(batches: Sequence[torch.Tensor], momentum: float | None, eps: float,
                     initial: dict[str, torch.Tensor] | None = None) -> list[dict[str, Any]]:
    """nn.BatchNorm1d(affine=False) in training mode on copies of ``batches``: each step's output and state."""
    bn = nn.BatchNorm1d(batches[0].shape[1], eps=eps, momentum=momentum, affine=False, dtype=torch.float64)
    if initial is not None:
        bn.load_state_dict(initial)
    steps, seen = [], 0
    for x in batches:
        before = _state(bn)
        with one_torch_thread():
            y = bn(x.detach().cpu().clone())
        steps.append({"x": x.detach().cpu(), "y": y.detach().clone(), "before": before, "after": _state(bn),
                      "seen": seen})
        seen += x.shape[0]
    return steps


def _momentum_factor(momentum: float | None, count_after: int) -> float:
    return 1.0 / count_after if momentum is None else momentum


def _blend(old: torch.Tensor, new: torch.Tensor, factor: float) -> torch.Tensor:
    return (1 - factor) * old + factor * new


def _norm_output_cause(x: torch.Tensor, got: torch.Tensor, right: torch.Tensor, eps: float, momentum: float | None,
                       before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> str | None:
    got = got.detach().cpu().double()
    mean, var_b, var_u = x.mean(0), x.var(0, unbiased=False), x.var(0, unbiased=True)
    candidates = [
        ((x - mean) / (var_b.sqrt() + eps), "eps is added outside the square root: divide by sqrt(var + eps), not "
                                            "sqrt(var) + eps (it matters for features whose variance is below eps)"),
        ((x - mean) / (var_u + eps).sqrt(), "normalised with the UNBIASED variance (x.var(0) divides by N - 1 by "
                                            "default): training mode normalises with the biased variance "
                                            "(unbiased=False); only running_var gets the unbiased one"),
        ((x - mean) / var_b.sqrt(), "eps is missing: divide by sqrt(var + eps)"),
        ((x - mean) / (var_b + eps), "divided by the variance; divide by its square root, sqrt(var + eps)"),
        (x - mean, "the batch was only centred: after subtracting the mean, divide by sqrt(var + eps)"),
        ((x - before["running_mean"]) / (before["running_var"] + eps).sqrt(),
         "training mode normalised with the running statistics; it must use the batch's own mean and biased "
         "variance (the running buffers are for eval mode)"),
        ((x - after["running_mean"]) / (after["running_var"] + eps).sqrt(),
         "training mode normalised with the running statistics (just updated); it must use the batch's own mean "
         "and biased variance (the running buffers are for eval mode)"),
        (lambda: (x - x.mean(1, keepdim=True)) / (x.var(1, unbiased=False, keepdim=True) + eps).sqrt(),
         "statistics taken over dim 1 (across features) instead of dim 0 (over the N samples of each feature)"),
        ((x - mean) / (var_b + 1e-5).sqrt(), "eps=1e-5 was used instead of the eps given to __init__ (hard-coded?)"),
    ]
    if momentum is not None and momentum != eps:
        candidates.append(((x - mean) / (var_b + momentum).sqrt(),
                           f"eps={momentum} (the momentum) was used as eps: the signature is RunningNorm(num_features, "
                           "momentum=0.1, eps=1e-5), in that order (nn.BatchNorm1d has eps first)"))
    return first_cause(got, candidates, right, rtol=_OUT_RTOL, atol=_OUT_ATOL)


def _norm_buffer_cause(name: str, step: dict[str, Any], got: torch.Tensor, momentum: float | None,
                       eps: float) -> str | None:
    x, before, right = step["x"], step["before"], step["after"][name]
    count = int(step["after"]["num_batches_tracked"])
    factor = _momentum_factor(momentum, count)
    got = got.detach().cpu().double()
    old = before[name]
    if name == "num_batches_tracked":
        if close(got, before[name], rtol=0, atol=0):
            return "num_batches_tracked is not incremented: add 1 for every batch seen in training mode"
        return None
    if momentum is None and count == 1 and not bool(torch.isfinite(got).all()):
        return ("the first batch gives non-finite values: the cumulative factor 1 / num_batches_tracked was computed "
                "BEFORE incrementing it (1 / 0); add 1 to num_batches_tracked first, then factor = 1 / "
                "num_batches_tracked (1 for the first batch)")
    new = x.mean(0) if name == "running_mean" else x.var(0, unbiased=True)
    candidates = []
    if momentum is None and step.get("seen"):
        n = x.shape[0]
        candidates.append((_blend(old, new, n / (step["seen"] + n)),
                           "the batches were weighted by their size (samples seen so far); momentum=None averages "
                           "the BATCHES equally: factor = 1 / num_batches_tracked"))
    if momentum == 0:
        candidates.append((_blend(old, new, 1.0 / count),
                           "momentum=0.0 was treated like None (a cumulative average): `if self.momentum:` and "
                           "`self.momentum or ...` are False for 0.0; test `self.momentum is None`. With momentum 0 "
                           "the running statistics never change"))
    if momentum is None:
        # (A blend the wrong way round shows at the first batch, where the factor is 1: see `stale` below.)
        candidates += [
            (_blend(old, new, 0.1), "momentum=None was treated as 0.1; None means a cumulative (equal-weight) average: "
                                    "factor = 1 / num_batches_tracked, counted after incrementing it"),
            (_blend(old, new, 1.0 / (count + 1)) if count > 0 else old,
             "the cumulative factor is off by one: with num_batches_tracked already incremented, use "
             "1 / num_batches_tracked (the first batch gets factor 1)"),
        ]
    else:
        candidates += [
            (_blend(new, old, factor), "momentum is applied the wrong way round: running = (1 - momentum) * running + "
                                       "momentum * batch_value (momentum weighs the NEW batch)"),
            (new, f"{name} was replaced by the batch value instead of blended: running = (1 - momentum) * running "
                  "+ momentum * batch_value"),
        ]
        if momentum != 0.1:
            candidates.append((_blend(old, new, 0.1), "momentum 0.1 was used instead of the momentum given to __init__ "
                                                      "(hard-coded, or momentum and eps swapped in the signature)"))
    if factor == 1.0:
        stale = (f"{name} did not change in training mode: it is not updated, or the blend is the wrong way round "
                 "(running = (1 - factor) * running + factor * batch_value; here factor is 1, so the batch value "
                 "replaces the old one)")
    else:
        stale = f"{name} was not updated in training mode"
    candidates.append((old, stale))
    if name == "running_var":
        var_b = x.var(0, unbiased=False)
        n = x.shape[0]
        # running = (1 - f) * old + f * var_b * k for one constant k other than N / (N - 1): a wrong N.
        with torch.no_grad():
            k = (got - (1 - factor) * old) / (factor * var_b) if factor else None
        constant_k = (k is not None and k.numel() > 0 and bool(torch.isfinite(k).all())
                      and float(k.max() - k.min()) < 1e-6 * float(k.abs().max()))
        if constant_k and abs(float(k.mean()) - n / (n - 1)) > 1e-6 and abs(float(k.mean()) - 1) > 1e-9:
            k_mean = float(k.mean())
            hint = ""
            for other, what in ((x.shape[1], "x.shape[1], the number of features"),
                                (x.numel(), "x.numel(), every element")):
                if other > 1 and abs(k_mean - other / (other - 1)) < 1e-6 * k_mean:
                    hint = f" (here N was {what})"
            return (f"running_var got the biased variance times {show_number(k_mean)}; the unbiased correction is "
                    f"N / (N - 1) = {show_number(n / (n - 1))} with N = x.shape[0] = {n}, the batch size{hint}")
        candidates += [
            (_blend(old, var_b, factor),
             "running_var is updated with the BIASED batch variance; BatchNorm feeds the UNBIASED variance "
             "(divided by N - 1, i.e. var * N / (N - 1)) into running_var"),
            (_blend(old, new.sqrt(), factor), "running_var is updated with the standard deviation, not the variance"),
            (_blend(old, new + eps, factor), "eps was added to the variance stored in running_var; eps only goes "
                                             "into the normalisation's sqrt(var + eps)"),
        ]
    return first_cause(got, candidates, right, rtol=_BUF_RTOL, atol=_BUF_ATOL)


def _norm_error_hint(error: StudentError, at: str) -> str | None:
    message = error.exception_message
    cause = constructor_hint(error, at)
    if cause:
        return cause
    if "NoneType" in message or error.exception_type == "ZeroDivisionError" or "division by zero" in message:
        return ("momentum=None is not handled: it means a cumulative average, factor = 1 / num_batches_tracked "
                "after incrementing num_batches_tracked")
    if "same dtype" in message or "expected scalar type" in message or "expected dtype" in message \
            or "same device" in message or "found at least two devices" in message:
        return ("a buffer that did not follow .to()/.double(): running_mean and running_var must be registered with "
                "self.register_buffer(...) (a plain tensor attribute is left behind), and forward must not create "
                "tensors with the default dtype or device")
    return None


def _with_order_note(seen: Seen) -> Seen:
    """When the student's signature has eps before momentum, errors in runs built with positional arguments
    are explained by that first (RunningNorm(3, None, 1e-3) then makes eps None)."""
    order = seen.get("signature") or []
    if "eps" in order and "momentum" in order and order.index("eps") < order.index("momentum"):
        def hint(error: StudentError, at: str) -> str | None:
            return ("your signature has eps before momentum (nn.BatchNorm1d's order), so positional arguments land in "
                    "the wrong parameters; the spec is RunningNorm(num_features, momentum=0.1, eps=1e-5)")
        seen.hint = hint
    return seen


def _buffer(buffers: dict[str, Any], name: str, label: str) -> torch.Tensor:
    value = buffers[name]
    if not isinstance(value, torch.Tensor):
        fail(f"{label}.{name} is {value}; it must be a tensor registered with self.register_buffer({name!r}, ...) "
             "(see buffers_registered)")
    return value


def _train_and_compare(seen: Seen, prefix: str, label: str, device: torch.device, steps: Sequence[dict[str, Any]],
                       momentum: float | None, eps: float, what: str,
                       inputs: Sequence[torch.Tensor] | None = None) -> None:
    """Compare the recorded training steps ``prefix.i`` with BatchNorm1d's ``steps``, one step at a time."""
    for i, step in enumerate(steps):
        x = inputs[i] if inputs is not None else step["x"].to(device)
        given = f"batch {i + 1} of {len(steps)} in training mode, x = {describe_tensor(x)}; {label}"
        got = seen[f"{prefix}.{i}.out"]
        check_tensor_output(f"{what}: wrong output", given, got, step["y"].to(device), device, rtol=_OUT_RTOL,
                            atol=_OUT_ATOL, value_cause=lambda: _norm_output_cause(
                                step["x"], got, step["y"], eps, momentum, step["before"], step["after"]))
        buffers = seen[f"{prefix}.{i}.buffers"]
        for name in _BUFFERS:
            value = _buffer(buffers, name, label)
            right = step["after"][name]
            if value.device.type != device.type:
                fail(f"{what}\n  input: {given}\n  after the batch, {name} is on {value.device.type}, not "
                     f"{device.type} (likely cause: it was replaced by a tensor created on the cpu)")
            if name != "num_batches_tracked" and value.dtype != torch.float64:
                fail(f"{what}\n  input: {given}\n  {name} is {dtype_name(value.dtype)} although the module was "
                     "converted with .double()\n  likely cause: it is not a registered buffer (.double() skipped "
                     "it), or it was replaced by a tensor created with the default dtype")
            if name != "num_batches_tracked" and value.numel() == right.numel() and \
                    tuple(value.shape) != tuple(right.shape):
                fail(f"{what}\n  input: {given}\n  after the batch, {name} has shape {tuple(value.shape)}; it must "
                     f"keep its shape {tuple(right.shape)}, as BatchNorm's (a state_dict() saved now no longer loads "
                     f"into a fresh module)\n  likely cause: the batch statistics were computed with keepdim=True (or "
                     "unsqueezed) and assigned to the buffer; keep the buffers 1-D and broadcast in the arithmetic")
            if value.numel() != right.numel() or not close(value.reshape(right.shape), right, rtol=_BUF_RTOL,
                                                           atol=_BUF_ATOL):
                same_size = value.numel() == right.numel()
                fail_mismatch(f"{what}: wrong {name} after batch {i + 1}", given=given,
                              expected=f"{show(right)}  (nn.BatchNorm1d(affine=False) on the same batches)",
                              got=show(value),
                              where=difference(value.reshape(right.shape), right, rtol=_BUF_RTOL, atol=_BUF_ATOL)
                              if same_size else None,
                              cause=_norm_buffer_cause(name, step, value.reshape(right.shape), momentum, eps)
                              if same_size else None)


def _did_something(label: str, x: torch.Tensor, got: Any, running_mean: Any, check: str) -> None:
    """Refuse a vacuous pass: a training step must return a tensor of x's shape that is not x (nor zeros),
    and must move running_mean away from its zeros."""
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(x.shape):
        shown = f"shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else show(got)
        fail(f"{label}(x) for x = {describe_tensor(x)} in training mode returned {shown}; it must return a tensor of "
             f"the input's shape, so {check} cannot be judged yet (see train_matches_batchnorm)")
    if close(got, x, rtol=1e-6, atol=1e-9) or not bool(got.detach().ne(0).any()):
        fail(f"{label}(x) for x = {describe_tensor(x)} in training mode returned "
             f"{'x unchanged' if close(got, x, rtol=1e-6, atol=1e-9) else 'zeros'}: nothing was normalised, so "
             f"{check} cannot be judged yet (see train_matches_batchnorm)")
    if not isinstance(running_mean, torch.Tensor) or bool((running_mean.detach() == 0).all()):
        fail(f"after a training batch, {label}.running_mean is "
             f"{'still all zeros' if isinstance(running_mean, torch.Tensor) else running_mean}: the running statistics "
             f"are not updated, so there is nothing for {check} to judge yet (see train_matches_batchnorm)")


# ==================================================================================================
# The checks
# ==================================================================================================
@observing
def _registration(live: Live, device: torch.device, x: torch.Tensor) -> None:
    label = "RunningNorm(5)"
    module = live.build("RunningNorm", (5,))
    live.run(f"{label}.to({device.type!r})", module.to, device)
    buffers = live.run(f"{label}.named_buffers()", lambda: dict(module.named_buffers()))
    parameters = live.run(f"{label}.named_parameters()", lambda: dict(module.named_parameters()))
    live.seen["buffers"] = list(buffers)
    live.seen["parameters"] = list(parameters)
    live.seen["keys"] = live.run(f"{label}.state_dict()", lambda: [str(k) for k in module.state_dict()])
    for name in _BUFFERS:
        value = live.run(f"reading {label}.{name}", getattr, module, name, None)
        live.seen[name] = {
            "value": snap(value) if isinstance(value, torch.Tensor) else None,
            "text": live.run(f"reading {label}.{name}", _buffer_text, module, name),
            "is_parameter": name in parameters,
            "is_buffer": value is not None and buffers.get(name) is value,
        }
    out = _forward(live, module, label, x)
    live.seen["out"] = snap(out)
    live.seen["after"] = _buffers_now(live, module, label)


@RUNNING_NORM_EXERCISE.check(points=1)
def buffers_registered(student: Submission, device: torch.device) -> None:
    """running_mean (zeros), running_var (ones), num_batches_tracked (int64 0): buffers in state_dict, no parameters."""
    (x,) = _norm_batches(5, [6])
    x = x.float().to(device)
    seen = observe(student, _registration, device, x, hint=_norm_error_hint)
    label = "RunningNorm(5)"
    buffers, parameters, keys = seen["buffers"], seen["parameters"], seen["keys"]
    for name in _BUFFERS:
        facts = seen[name]
        value = facts["value"]
        nested = [n for n in buffers + parameters if n.endswith("." + name)]
        if facts["is_parameter"]:
            fail(f"{label}.{name} is an nn.Parameter; running statistics are buffers: an optimiser would update a "
                 f"Parameter and it would take part in autograd\n  likely cause: nn.Parameter(...) where "
                 f"self.register_buffer({name!r}, ...) belongs")
        if value is None and nested:
            fail(f"{label} has no {name} of its own, only `{nested[0]}` in a submodule\n  likely cause: an "
                 "nn.BatchNorm1d inside; the exercise is to register the buffers and compute the statistics yourself")
        if value is None:
            fail(f"{label}.{name} is {facts['text']}; it must be a tensor registered with "
                 f"self.register_buffer({name!r}, ...)")
        if not facts["is_buffer"]:
            fail(f"{label}.{name} is a plain tensor attribute, not a registered buffer: it is not in state_dict(), "
                 f"so saving and loading lose it, and .to()/.double() leave it behind\n  likely cause: "
                 f"self.{name} = torch...(...) where self.register_buffer({name!r}, torch...(...)) belongs")
        if name not in keys:
            fail(f"{label}.{name} is not in state_dict() (keys: {keys})\n  likely cause: registered with "
                 "persistent=False; running statistics must be saved with the model")
        if value.device.type != device.type:
            fail(f"after {label}.to({device.type!r}), {name} is on {value.device.type}: it did not follow .to()")
    if parameters:
        fail(f"{label} has parameters {parameters}; like nn.BatchNorm1d(affine=False) it has none (no "
             "learnable weight or bias): its state is buffers only")
    right = {"running_mean": torch.zeros(5), "running_var": torch.ones(5)}
    counter = seen["num_batches_tracked"]["value"]
    if counter.dtype != torch.int64:
        fail(f"{label}.num_batches_tracked is {dtype_name(counter.dtype)}; it must be int64, as BatchNorm's "
             "(likely cause: torch.tensor(0.0) or torch.zeros(()); use torch.tensor(0, dtype=torch.long))")
    if counter.numel() != 1 or counter.item() != 0:
        fail(f"{label}.num_batches_tracked is {show(counter)}; it must start as a single 0")
    for name, expected in right.items():
        value = seen[name]["value"]
        if not value.is_floating_point():
            fail(f"{label}.{name} is {dtype_name(value.dtype)}; it must be a floating tensor like the input "
                 "(likely cause: built from ints, e.g. torch.zeros(n, dtype=torch.long) or torch.tensor([0] * n))")
        if tuple(value.shape) != (5,) or not close(value, expected, rtol=0, atol=0):
            fail_mismatch(f"{label}.{name} starts wrong", given=label, expected=f"shape (5,), {show(expected)}",
                          got=f"shape {tuple(value.shape)}, {show(value)}",
                          cause="running_mean starts at zeros and running_var at ones, one value per feature")
    _did_something(label, x, seen["out"], seen["after"]["running_mean"], "the buffers")


@observing
def _follow_scenario(live: Live, device: torch.device, x: torch.Tensor) -> None:
    label = "RunningNorm(4)"
    module = _build_norm(live, (4,), {}, device)
    for when in ("built", "trained"):
        live.seen[f"{when}.buffers"] = _buffers_now(live, module, label)
        state = live.run(f"{label}.state_dict()", module.state_dict)
        live.seen[f"{when}.state"] = live.run(f"{label}.state_dict()", lambda: {
            str(k): snap(v) for k, v in state.items() if str(k) in _BUFFERS})
        live.seen[f"{when}.keys"] = live.run(f"{label}.state_dict()", lambda: [str(k) for k in state])
        if when == "built":
            out = _forward(live, module, label, x)
            live.seen["out"] = snap(out)
    fresh = _build_norm(live, (4,), {}, device)
    live.run(f"a fresh {label}.load_state_dict(trained.state_dict())", fresh.load_state_dict, state)
    live.seen["loaded.buffers"] = _buffers_now(live, fresh, label)


@RUNNING_NORM_EXERCISE.check(points=1)
def buffers_follow_to(student: Submission, device: torch.device) -> None:
    """After .to(device).double() and a training step the buffers are on the device, float64/int64, in
    state_dict, and a fresh module loading that state_dict holds the same buffers."""
    (x,) = _norm_batches(4, [6])
    x = x.to(device)
    seen = observe(student, _follow_scenario, device, x, hint=_norm_error_hint)
    label = "RunningNorm(4)"
    for when, text in (("built", "after .to().double()"), ("trained", "after a training step")):
        buffers = seen[f"{when}.buffers"]
        for name in _BUFFERS:
            value = _buffer(buffers, name, label)
            want = torch.int64 if name == "num_batches_tracked" else torch.float64
            if value.dtype != want or value.device.type != device.type:
                if name == "num_batches_tracked" and value.is_floating_point():
                    cause = ("num_batches_tracked is a floating tensor, so .double() converts it (or forward made it "
                             "float: num_batches_tracked = num_batches_tracked + 1.0); register it as "
                             "torch.tensor(0, dtype=torch.long) and add the int 1 in place")
                elif when == "built":
                    cause = ("it is not a registered buffer (a plain tensor attribute is left behind by .to() and "
                             ".double()): use self.register_buffer")
                else:
                    cause = ("forward replaced it with a new tensor created with the default dtype or on the cpu; "
                             "update it in place (or from tensors computed from x)")
                fail(f"{text}, {label}.{name} is {dtype_name(value.dtype)} on {value.device.type}; expected "
                     f"{dtype_name(want)} on {device.type}\n  likely cause: {cause}")
        state, keys = seen[f"{when}.state"], seen[f"{when}.keys"]
        for name in _BUFFERS:
            if name not in state:
                fail(f"{text}, {name} is not in {label}.state_dict() (keys: {keys}); register it with "
                     f"self.register_buffer({name!r}, ...)")
            if not isinstance(state[name], torch.Tensor) or state[name].shape != buffers[name].shape or \
                    not torch.equal(state[name].cpu(), buffers[name].cpu()):
                fail(f"{text}, state_dict()[{name!r}] differs from {label}.{name}: the saved tensor is not the one "
                     "the module uses (likely cause: the buffer and the attribute are two different tensors)")
        if when == "built":
            _did_something(label, x, seen["out"], seen["trained.buffers"]["running_mean"], "the buffers after a step")
    counter = seen["trained.buffers"]["num_batches_tracked"]
    if counter.numel() != 1 or int(counter.reshape(-1)[0]) != 1:
        # a cause only where the counter stayed at its start: above 1 it was counted too often (or shared)
        stayed = counter.numel() == 1 and int(counter.reshape(-1)[0]) == 0
        fail(f"after one training step, {label}.num_batches_tracked is {show(counter)}, expected 1"
             + (" (likely cause: it is not incremented in training mode)" if stayed else
                " (one training step adds exactly 1)"))
    loaded = seen["loaded.buffers"]
    for name in _BUFFERS:
        value, want = _buffer(loaded, name, label), seen["trained.buffers"][name]
        if value.shape != want.shape or value.dtype != want.dtype or not torch.equal(value.cpu(), want.cpu()):
            fail(f"a fresh {label}.to({device.type!r}).double() that loaded the trained module's state_dict() holds "
                 f"{name} = {show(value)}, expected {show(want)}: load_state_dict must restore every buffer")


@RUNNING_NORM_EXERCISE.check(points=1)
def train_matches_batchnorm(student: Submission, device: torch.device) -> None:
    """Training mode with the defaults matches BatchNorm1d (outputs and buffers) over several batches, for 1 to
    257 features, batches of 2 to 300 samples, contiguous or not."""
    batches = _norm_batches(6, [8, 5, 16, 2, 9, 7, 12, 300])
    batches[5] = batches[5].t().contiguous().t()  # the same values, laid out transposed
    batches[6] = torch.stack([batches[6], -batches[6]], -1)[..., 0]  # the same values, every other storage element
    runs = [((6,), {}, batches), ((1,), {}, _norm_batches(1, [3, 2])), ((257,), {}, _norm_batches(257, [33, 4]))]
    traces = [_batchnorm_trace(b, 0.1, 1e-5) for _, _, b in runs]
    inputs = [[x.to(device) for x in b] for _, _, b in runs]
    seen = observe(student, _train_runs, [(args, kwargs, xs) for (args, kwargs, _), xs in zip(runs, inputs)], device,
                   hint=_norm_error_hint)
    for r, ((args, kwargs, _), steps) in enumerate(zip(runs, traces)):
        label = _label(args, kwargs)
        _train_and_compare(seen, str(r), label, device, steps, 0.1, 1e-5,
                           f"training mode differs from nn.BatchNorm1d({args[0]}, affine=False)", inputs[r])


@RUNNING_NORM_EXERCISE.check(points=1)
def momentum_and_eps(student: Submission, device: torch.device) -> None:
    """Other momentum (0 and 1 included) and eps values (given positionally and by keyword) match BatchNorm1d."""
    settings = [((0.5, 1e-3), {}), ((), {"momentum": 1.0, "eps": 1e-2}), ((), {"eps": 1e-4, "momentum": 0.02}),
                ((), {"momentum": 0.0, "eps": 1e-3}), ((0.3,), {"eps": 0.5})]
    runs = []
    for args, kwargs in settings:
        momentum = args[0] if args else kwargs["momentum"]
        eps = args[1] if len(args) > 1 else kwargs["eps"]
        batches = _norm_batches(5, [7, 4, 10])
        runs.append(((5, *args), kwargs, momentum, eps, batches, _batchnorm_trace(batches, momentum, eps)))
    seen = observe(student, _train_runs, [(args, kwargs, [b.to(device) for b in batches])
                                          for args, kwargs, _, _, batches, _ in runs], device, hint=_norm_error_hint)
    order = seen["signature"]
    _with_order_note(seen)
    for r, (args, kwargs, momentum, eps, _, steps) in enumerate(runs):
        label = _label(args, kwargs)
        try:
            _train_and_compare(seen, str(r), label, device, steps, momentum, eps,
                               f"training mode differs from nn.BatchNorm1d(5, eps={eps}, momentum={momentum}, "
                               "affine=False)")
        except CheckFailed as exc:
            if len(args) > 1 and "eps" in order and "momentum" in order \
                    and order.index("eps") < order.index("momentum"):
                raise CheckFailed(f"{exc}\n  note: your signature has eps before momentum (nn.BatchNorm1d's order); "
                                  "the spec is RunningNorm(num_features, momentum=0.1, eps=1e-5)") from None
            raise


@RUNNING_NORM_EXERCISE.check(points=1)
def momentum_none_cumulative(student: Submission, device: torch.device) -> None:
    """momentum=None keeps a cumulative average of the batch statistics, like BatchNorm1d(momentum=None)."""
    # Sizes where weighting by batch size (4/10, 12/22, ...) differs from both 1/k and the off-by-one 1/(k+1).
    runs = [((4,), {"momentum": None}, _norm_batches(4, [6, 4, 12, 5, 3])),
            ((3, None, 1e-3), {}, _norm_batches(3, [5, 9]))]
    traces = [_batchnorm_trace(batches, None, 1e-5 if not args[2:] else args[2]) for args, _, batches in runs]
    seen = observe(student, _train_runs, [(args, kwargs, [b.to(device) for b in batches])
                                          for args, kwargs, batches in runs], device, hint=_norm_error_hint)
    _with_order_note(seen)
    for r, ((args, kwargs, _), steps) in enumerate(zip(runs, traces)):
        eps = 1e-5 if not args[2:] else args[2]
        _train_and_compare(seen, str(r), _label(args, kwargs), device, steps, None, eps,
                           f"with momentum=None, training mode differs from nn.BatchNorm1d({args[0]}, momentum=None, "
                           f"eps={eps}, affine=False)")


def _tests_train_method(module: nn.Module) -> bool:
    """Whether the module's forward tests ``self.train`` (the method, always true) instead of ``self.training``."""
    try:
        source = inspect.getsource(type(module).forward)
    except (OSError, TypeError):
        return False
    return re.search(r"\bself\.train\b(?!\s*\()", source) is not None


@observing
def _eval_scenario(live: Live, device: torch.device,
                   runs: list[tuple[tuple, dict, list[torch.Tensor], list[torch.Tensor], torch.Tensor]]) -> None:
    """For each run: train on some batches, .eval(), run the eval batches, .train(), one more training batch."""
    _record_signature(live)
    for r, (args, kwargs, train, evaluate, again) in enumerate(runs):
        label = _label(args, kwargs)
        module = _build_norm(live, args, kwargs, device)
        for i, x in enumerate(train):
            live.seen[f"{r}.train.{i}.out"] = snap(_forward(live, module, label, x))
        live.seen["tests_train_method"] = _tests_train_method(module)
        live.run(f"{label}.eval()", module.eval)
        live.seen[f"{r}.frozen"] = _buffers_now(live, module, label)
        for i, x in enumerate(evaluate):
            live.seen[f"{r}.eval.{i}.out"] = snap(_forward(live, module, label, x, "eval mode"))
            live.seen[f"{r}.eval.{i}.buffers"] = _buffers_now(live, module, label)
        live.run(f"{label}.train()", module.train)
        live.seen[f"{r}.again.0.out"] = snap(_forward(live, module, label, again, "training mode again"))
        live.seen[f"{r}.again.0.buffers"] = _buffers_now(live, module, label)


@RUNNING_NORM_EXERCISE.check(points=1)
def eval_uses_running_stats(student: Submission, device: torch.device) -> None:
    """In eval mode the output uses the running buffers and the module's eps (as BatchNorm1d's) and no buffer
    changes; back in training mode the updates resume."""
    runs = []
    for args, kwargs, momentum, eps in [((4,), {}, 0.1, 1e-5), ((3, 0.3), {"eps": 0.05}, 0.3, 0.05)]:
        features = args[0]
        train = [x.to(device) for x in _norm_batches(features, [8, 6])]
        # Unlike the training data, so the batch statistics differ from the running ones; batch sizes 1 too.
        evaluate = [b * 3 + 1 for b in _norm_batches(features, [5, 1, 7])]
        evaluate[2] = evaluate[2].t().contiguous().t()
        (again,) = _norm_batches(features, [9])
        runs.append((args, kwargs, momentum, eps, train, evaluate, again))
    seen = observe(student, _eval_scenario, device, [
        (args, kwargs, train, [x.to(device) for x in evaluate], again.to(device))
        for args, kwargs, _, _, train, evaluate, again in runs], hint=_norm_error_hint)
    _with_order_note(seen)
    for r, (args, kwargs, momentum, eps, train, evaluate, again) in enumerate(runs):
        _judge_eval(seen, str(r), _label(args, kwargs), args[0], momentum, eps, train, evaluate, again, device)


def _judge_eval(seen: Seen, prefix: str, label: str, features: int, momentum: float, eps: float,
                train: list[torch.Tensor], evaluate: list[torch.Tensor], again: torch.Tensor,
                device: torch.device) -> None:
    frozen_raw = seen[f"{prefix}.frozen"]
    _did_something(label, train[-1], seen[f"{prefix}.train.{len(train) - 1}.out"], frozen_raw["running_mean"],
                   "eval mode (which uses the running statistics)")
    frozen = {name: _buffer(frozen_raw, name, label).cpu() for name in _BUFFERS}
    if frozen["running_var"].numel() != features or frozen["running_mean"].numel() != features or \
            frozen["num_batches_tracked"].numel() != 1:
        fail(f"{label}.running_mean and running_var must hold one value per feature ({features}), and "
             "num_batches_tracked a single count; see buffers_registered")
    rm, rv = frozen["running_mean"].double().reshape(features), frozen["running_var"].double().reshape(features)
    # Expected: BatchNorm1d in eval mode holding the very running statistics the module holds now.
    bn = nn.BatchNorm1d(features, eps=eps, affine=False, dtype=torch.float64).eval()
    bn.running_mean.copy_(rm)
    bn.running_var.copy_(rv)
    with one_torch_thread():
        expected = [bn(x.clone()).detach() for x in evaluate]
    for i, (x, want) in enumerate(zip(evaluate, expected)):
        given = f"eval mode after {len(train)} training batches, x = {describe_tensor(x.to(device))}; {label}"
        got = seen[f"{prefix}.eval.{i}.out"]

        def cause(x=x, got=got, want=want) -> str | None:
            batch = (x - x.mean(0)) / (x.var(0, unbiased=False) + eps).sqrt()
            if close(got, batch, rtol=_OUT_RTOL, atol=_OUT_ATOL) and seen["tests_train_method"]:
                return ("eval mode still normalises with the batch's own statistics: `self.train` (no parentheses) "
                        "is a method, which is always true; the flag is `self.training`")
            return first_cause(got.detach().cpu().double(), [
                (lambda: batch if x.shape[0] > 1 else None,
                 "eval mode still normalises with the batch's own statistics; in eval mode (self.training is "
                 "False) use running_mean and running_var"),
                ((x - rm) / rv.sqrt(), "eps is missing: divide by sqrt(running_var + eps)"),
                ((x - rm) / (rv.sqrt() + eps),
                 "eps is added outside the square root: divide by sqrt(running_var + eps)"),
                ((x - rm) / (rv + 1e-5).sqrt(), "eval mode uses eps=1e-5 instead of the eps given to __init__ "
                                                "(hard-coded?)"),
            ], want, rtol=_OUT_RTOL, atol=_OUT_ATOL)

        check_tensor_output("eval mode gives the wrong output", given, got, want.to(device), device, rtol=_OUT_RTOL,
                            atol=_OUT_ATOL, value_cause=cause)
        now = seen[f"{prefix}.eval.{i}.buffers"]
        for name in _BUFFERS:
            value = _buffer(now, name, label).cpu()
            if value.shape != frozen[name].shape or not torch.equal(value, frozen[name]):
                fail_mismatch(f"{name} changed in eval mode", given=given, expected=f"{show(frozen[name])} "
                              "(unchanged)", got=show(value),
                              cause="eval mode must change nothing: update the buffers (and num_batches_tracked) "
                                    "only when self.training is True")
    # Back in training mode: BatchNorm1d continues from the same running statistics.
    initial = {"running_mean": rm, "running_var": rv,
               "num_batches_tracked": frozen["num_batches_tracked"].reshape(()).long()}
    steps = _batchnorm_trace([again], momentum, eps, initial=initial)
    _train_and_compare(seen, f"{prefix}.again", label, device, steps, momentum, eps,
                       f"after .eval() and then .train() again, training mode differs from nn.BatchNorm1d({features}, "
                       f"eps={eps}, momentum={momentum}, affine=False)")


@observing
def _history_scenario(live: Live, device: torch.device, runs: list[tuple[tuple, dict, list[torch.Tensor]]]) -> None:
    for r, (args, kwargs, batches) in enumerate(runs):
        label = _label(args, kwargs)
        module = _build_norm(live, args, kwargs, device)
        for i, batch in enumerate(batches):
            x = batch.requires_grad_(True)
            out = _forward(live, module, label, x)
            live.seen[f"{r}.{i}.out"] = snap(out)
            live.seen[f"{r}.{i}.facts"] = {}
            for name in _BUFFERS:
                value = live.run(f"reading {label}.{name}", getattr, module, name, None)
                live.seen[f"{r}.{i}.facts"][name] = grad_facts(value)
            live.seen[f"{r}.{i}.buffers"] = _buffers_now(live, module, label)
            if isinstance(out, torch.Tensor) and out.requires_grad:
                live.run(f"backward through {label}", out.sum().backward)


@RUNNING_NORM_EXERCISE.check(points=1)
def buffers_hold_no_history(student: Submission, device: torch.device) -> None:
    """With an input that requires grad, the buffers get no autograd history (no grad_fn, requires_grad False),
    momentum=None included."""
    runs = [((4,), {}, _norm_batches(4, [6, 9])), ((3,), {"momentum": None}, _norm_batches(3, [5, 4]))]
    seen = observe(student, _history_scenario, device, [(a, k, [b.to(device) for b in bs]) for a, k, bs in runs],
                   hint=_norm_error_hint)
    for r, (args, kwargs, batches) in enumerate(runs):
        label = _label(args, kwargs)
        for i, batch in enumerate(batches):
            x = batch.to(device)
            got = seen[f"{r}.{i}.out"]
            for name, facts in seen[f"{r}.{i}.facts"].items():
                if facts is None:
                    fail(f"{label}.{name} is {seen[f'{r}.{i}.buffers'][name]}; it must be a registered buffer (see "
                         "buffers_registered)")
                if facts["requires_grad"] or facts["grad_fn"] is not None:
                    fail(f"after batch {i + 1} in training mode with x = {describe_tensor(x)}, requires_grad=True, "
                         f"{label}.{name} holds autograd history (requires_grad={facts['requires_grad']}, "
                         f"grad_fn={facts['grad_fn']})\n"
                         "  likely cause: the running statistics were updated with the graph attached; update them "
                         "inside `with torch.no_grad():` or from detached values (mean.detach(), var.detach()). "
                         "Otherwise every step's graph stays alive through the buffers, and memory grows")
            _did_something(label, x, got, seen[f"{r}.{i}.buffers"]["running_mean"], "the buffers' autograd history")


@observing
def _gradient_scenario(live: Live, device: torch.device, batches: list[torch.Tensor],
                       upstreams: list[torch.Tensor]) -> None:
    label = "RunningNorm(5)"
    module = _build_norm(live, (5,), {}, device)
    for i, (batch, upstream) in enumerate(zip(batches, upstreams)):
        x = batch.requires_grad_(True)
        out = _forward(live, module, label, x)
        live.seen[f"{i}.out"] = snap(out)
        live.seen[f"{i}.facts"] = grad_facts(out)
        if not (isinstance(out, torch.Tensor) and out.requires_grad and out.shape == upstream.shape):
            return  # the judge says what is wrong with the output
        loss = (out * upstream.to(dtype=out.dtype)).sum()
        live.run(f"loss.backward() through {label}", loss.backward)
        live.seen[f"{i}.grad"] = snap(x.grad)


def _detached_mean_grad(batch: torch.Tensor, upstream: torch.Tensor) -> torch.Tensor:
    x = batch.clone().requires_grad_(True)
    ((x - x.mean(0).detach()) / (x.var(0, unbiased=False) + 1e-5).sqrt() * upstream).sum().backward()
    return x.grad


def _detached_var_grad(batch: torch.Tensor, upstream: torch.Tensor) -> torch.Tensor:
    x = batch.clone().requires_grad_(True)
    ((x - x.mean(0)) / (x.var(0, unbiased=False).detach() + 1e-5).sqrt() * upstream).sum().backward()
    return x.grad


@RUNNING_NORM_EXERCISE.check(points=1)
def input_gradient_matches_batchnorm(student: Submission, device: torch.device) -> None:
    """In training mode, x.grad equals BatchNorm1d's (gradients flow through the batch mean and variance)."""
    batches = _norm_batches(5, [8, 3, 40])
    upstreams = [torch.randn_like(b) for b in batches]
    expected, outputs = [], []
    bn = nn.BatchNorm1d(5, affine=False, dtype=torch.float64)
    for batch, upstream in zip(batches, upstreams):
        leaf = batch.clone().requires_grad_(True)
        with one_torch_thread():
            out = bn(leaf)
            (out * upstream).sum().backward()
        expected.append(leaf.grad)
        outputs.append(out.detach())
    seen = observe(student, _gradient_scenario, device, [b.to(device) for b in batches],
                   [u.to(device) for u in upstreams], hint=_norm_error_hint)
    label = "RunningNorm(5)"
    for i, (batch, upstream, want, want_out) in enumerate(zip(batches, upstreams, expected, outputs)):
        given = f"loss = ({label}(x) * r).sum() in training mode, x = {describe_tensor(batch.to(device))}"
        got = seen[f"{i}.out"]
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(batch.shape):
            shown = f"shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else show(got)
            fail(f"{given}\n  the output is {shown}; it must be a tensor of the input's shape {tuple(batch.shape)} "
                 "(see train_matches_batchnorm)")
        if not seen[f"{i}.facts"]["requires_grad"]:
            fail(f"{given}\n  the output has no autograd history, so no gradient reaches x\n  likely cause: the "
                 "normalisation runs under torch.no_grad() or uses x.detach(); keep no_grad for the buffer update")
        grad = seen[f"{i}.grad"]
        if grad is None:
            fail(f"{given}\n  x.grad is None after backward (likely cause: x.detach() or x.data in forward)")

        def cause(batch=batch, upstream=upstream, grad=grad, got=got, want_out=want_out) -> str | None:
            if not close(got, want_out, rtol=_OUT_RTOL, atol=_OUT_ATOL):
                return "the training-mode output itself differs from BatchNorm1d's (see train_matches_batchnorm)"
            var_b = batch.var(0, unbiased=False)
            return first_cause(grad.detach().cpu().double(), [
                (upstream / (var_b + 1e-5).sqrt(),
                 "the batch mean and variance were detached (computed under torch.no_grad() or with .detach()) "
                 "before normalising; in training mode the gradient flows through them too: detach only what goes "
                 "into the running buffers"),
                (lambda: _detached_mean_grad(batch, upstream),
                 "the batch mean was detached before normalising (x - mean.detach()); the gradient must flow through "
                 "the mean too: detach only what goes into the running buffers"),
                (lambda: _detached_var_grad(batch, upstream),
                 "the batch variance was detached before normalising; the gradient must flow through it too: detach "
                 "only what goes into the running buffers"),
            ], want, rtol=1e-6, atol=1e-9)

        if not close(grad, want, rtol=1e-6, atol=1e-9):
            fail_mismatch("x.grad differs from nn.BatchNorm1d(affine=False)'s", given=given,
                          expected=show(want), got=show(grad), where=difference(grad, want, rtol=1e-6, atol=1e-9),
                          cause=cause())


@observing
def _statistics_scenario(live: Live, device: torch.device, first: torch.Tensor, second: torch.Tensor) -> None:
    label = "RunningNorm(4)"
    module = _build_norm(live, (4,), {}, device)
    live.seen["batchnorm_modules"] = live.run(f"{label}.named_modules()", lambda: [
        name or "(the module itself)" for name, m in module.named_modules()
        if isinstance(m, nn.modules.batchnorm._BatchNorm)])
    with torch_calls() as calls:
        try:
            out = _forward(live, module, label, first)
            live.seen["out"] = snap(out)
            live.seen["running_mean"] = _buffers_now(live, module, label)["running_mean"]
            live.run(f"{label}.eval()", module.eval)
            _forward(live, module, label, second, "eval mode")
        finally:
            live.seen["calls"] = sorted({n for n in calls.names if "batch_norm" in n or "instance_norm" in n})


@RUNNING_NORM_EXERCISE.check(points=1)
def computes_statistics_itself(student: Submission, device: torch.device) -> None:
    """No F.batch_norm call and no BatchNorm submodule: the statistics are computed by the module itself."""
    first, second = (b.to(device) for b in _norm_batches(4, [6, 5]))
    seen = observe(student, _statistics_scenario, device, first, second, hint=_norm_error_hint)
    label = "RunningNorm(4)"
    inner = seen["batchnorm_modules"]
    if inner:
        fail(f"{label} contains a BatchNorm module (`{inner[0]}`); the exercise is to compute the statistics "
             "yourself, with register_buffer and tensor operations (no nn.BatchNorm1d, no F.batch_norm)")
    used = seen["calls"]
    if used:
        fail(f"{label}'s forward called torch {', '.join(used)} (F.batch_norm, or a function built on it); the "
             "exercise is to compute the mean and variance yourself with tensor operations")
    seen.raise_error()
    _did_something(label, first, seen["out"], seen["running_mean"], "how the statistics are computed")


# ==================================================================================================
# Generated runs (issue 32): RunningNorm's whole domain, drawn per check, observed in the runner, judged here
# ==================================================================================================
# What the spec allows: any num_features (1 to 40, and wide), momentum None, 0, 1, 0.1 or any value between, any
# eps, given by position or keyword (num_features by keyword too); float32 or .double(); any sequence of training
# batches (2 to 300 samples, the edge N = 2 included), eval batches (0 and 1 samples included), mode switches
# both ways and load_state_dict of any buffers (num_batches_tracked past 256 included), inputs of any layout
# (transposed, strided, offset, expanded rows: a zero variance), features whose variance is far below eps or
# zero, inputs that require grad (the buffers still never hold history) and backward through the output; and
# several modules alive at once, their steps interleaved.
import dataclasses  # noqa: E402
import math  # noqa: E402

from graders import domain  # noqa: E402
from graders.isolation import StudentRaised  # noqa: E402
from graders.outcomes import StudentCodeError  # noqa: E402
from graders.registry import judge_only  # noqa: E402

NORM_FORMS = ("default", "momentum_kw", "eps_kw", "both_kw", "positional2", "positional3", "keywords")
NORM_LAYOUTS = ("contiguous", "transposed", "every_other", "offset", "expanded")


@dataclasses.dataclass(frozen=True)
class NormStep:
    kind: str  # "train", "eval" or "load" (load_state_dict of generated buffers)
    n: int
    layout: str
    grad: str  # "plain", "requires_grad" or "backward" ((out * r).sum().backward(), x.grad observed)
    seed: int


@dataclasses.dataclass(frozen=True)
class NormRun:
    features: int
    form: str
    momentum: float | None
    eps: float
    double: bool
    steps: tuple[NormStep, ...]
    seed: int

    @property
    def args(self) -> tuple:
        return {"positional2": (self.features, self.momentum),
                "positional3": (self.features, self.momentum, self.eps), "keywords": ()}.get(self.form,
                                                                                            (self.features,))

    @property
    def kwargs(self) -> dict[str, Any]:
        return {"momentum_kw": {"momentum": self.momentum}, "eps_kw": {"eps": self.eps},
                "both_kw": {"momentum": self.momentum, "eps": self.eps},
                "keywords": {"num_features": self.features, "momentum": self.momentum, "eps": self.eps}
                }.get(self.form, {})

    @property
    def built(self) -> str:
        return _label(self.args, self.kwargs)

    @property
    def dtype(self) -> torch.dtype:
        return torch.float64 if self.double else torch.float32


def norm_step(generator: Any, kind: str, double: bool) -> NormStep:
    if kind == "train":
        n = generator.randint(40, 300) if generator.random() < 0.08 else domain.small_int(generator, 2, 12)
    else:
        n = domain.small_int(generator, 0, 8)
    layouts = NORM_LAYOUTS if double else NORM_LAYOUTS[:-1]  # float32: no zero variance (eps's rounding)
    layout = domain.pick(generator, layouts, [4, 2, 2, 2, 1][:len(layouts)])
    grad = domain.pick(generator, ("plain", "requires_grad", "backward"), [3, 1, 1])
    return NormStep(kind, n, layout, grad, generator.getrandbits(31))


def norm_run(generator: Any) -> NormRun:
    features = generator.randint(60, 130) if generator.random() < 0.06 else domain.small_int(generator, 1, 9)
    form = domain.pick(generator, NORM_FORMS, [2, 2, 1, 2, 1, 2, 1])
    double = generator.random() < 0.6
    momentum = domain.pick(generator, [None, 0.0, 1.0, 0.1, round(generator.uniform(0.01, 0.99), 3)], [3, 1, 1, 1, 3])
    eps = 10 ** generator.uniform(-8 if double else -5, 0) if generator.random() < 0.7 else 1e-5
    if form in ("default", "eps_kw"):
        momentum = 0.1
    if form in ("default", "momentum_kw", "positional2"):
        eps = 1e-5
    count = generator.randint(1, 6)
    kinds = ["train"] + [domain.pick(generator, ["train", "eval", "load"], [5, 3, 1]) for _ in range(count - 1)]
    if generator.random() < 0.15:
        kinds[0] = domain.pick(generator, ["eval", "load"])  # eval first: the initial buffers; or loaded ones
    return NormRun(features, form, momentum, eps, double, tuple(norm_step(generator, k, double) for k in kinds),
                   generator.getrandbits(31))


def norm_batch(run: NormRun, step: NormStep) -> torch.Tensor:
    """The step's input, on the CPU: per-feature scales of the run (1e-3 to 100 for float64, some features
    constant; 0.1 to 10 for float32) and shifts, eval batches shifted further; laid out as the step says."""
    g = torch.Generator().manual_seed(run.seed)
    f, n, dtype = run.features, step.n, run.dtype
    if run.double:
        scale = 10 ** (torch.rand(f, generator=g, dtype=torch.float64) * 5 - 3)
        scale = torch.where(torch.rand(f, generator=g, dtype=torch.float64) < 0.05, 0.0, scale)
        shift = torch.rand(f, generator=g, dtype=torch.float64) * 6 - 3
    else:
        scale = 10 ** (torch.rand(f, generator=g, dtype=torch.float64) * 2 - 1)
        shift = torch.rand(f, generator=g, dtype=torch.float64) * 2 - 1
    g = torch.Generator().manual_seed(step.seed)
    if step.kind == "eval":
        shift = shift + torch.randn(f, generator=g, dtype=torch.float64) * scale * 2
    values = (torch.randn(n, f, generator=g, dtype=torch.float64) * scale + shift).to(dtype)
    if step.layout == "transposed":
        return values.t().contiguous().t()
    if step.layout == "every_other":
        return torch.stack([values, -values], -1)[..., 0]
    if step.layout == "offset":
        return torch.cat([torch.zeros(5, dtype=dtype), values.reshape(-1)])[5:].view(n, f)
    if step.layout == "expanded":
        return values[:1].expand(n, f) if n else values
    return values


def norm_state(run: NormRun, step: NormStep) -> dict[str, torch.Tensor]:
    """Buffers to load: any running mean, a positive running_var, a count from 0 to 1000 (past 256)."""
    g = torch.Generator().manual_seed(step.seed)
    count = int(torch.randint(0, 1001, (), generator=g))
    return {"running_mean": torch.randn(run.features, generator=g, dtype=run.dtype) * 2,
            "running_var": torch.rand(run.features, generator=g, dtype=run.dtype) * 3 + 1e-3,
            "num_batches_tracked": torch.tensor(count, dtype=torch.long)}


def norm_upstream(run: NormRun, step: NormStep) -> torch.Tensor:
    g = torch.Generator().manual_seed(step.seed + 1)
    return torch.randn(step.n, run.features, generator=g, dtype=run.dtype)


@observing
def _generated_runs_scenario(live: Live, runs: list[NormRun], inputs: dict[tuple[int, int], Any],
                             order: list[tuple[int, int]], device: torch.device, first: int = 0) -> None:
    """Build every run's module first (all alive at once), then take the steps in ``order`` (the runs
    interleaved). Each step records the output (x.grad after a backward), the buffers and their autograd facts;
    a step that raises is recorded, and its run stops there."""
    modules, training, stopped = [], [True] * len(runs), set()
    for r, run in enumerate(runs):
        module = live.build("RunningNorm", run.args, run.kwargs)
        live.run(f"{run.built}.to({device.type!r})", module.to, device)
        if run.double:
            live.run(f"{run.built}.double()", module.double)
        modules.append(module)
    for r, s in order:
        if r in stopped:
            continue
        step, module, key = runs[r].steps[s], modules[r], f"{first + r}.{s}"
        try:
            if step.kind == "load":
                live.student.run(module.load_state_dict, inputs[(first + r, s)])
            else:
                if training[r] != (step.kind == "train"):
                    live.student.run(module.train, step.kind == "train")
                    training[r] = step.kind == "train"
                x, upstream = inputs[(first + r, s)]
                if step.grad != "plain":
                    x.requires_grad_(True)
                out = live.student.run(module, x)
                live.seen[f"{key}.out"] = snap(out)
                if step.grad == "backward" and isinstance(out, torch.Tensor) and out.requires_grad and \
                        tuple(out.shape) == tuple(x.shape):
                    live.student.run((out * upstream.to(dtype=out.dtype)).sum().backward)
                    live.seen[f"{key}.grad"] = snap(x.grad)
            buffers, history = {}, {}
            for name in _BUFFERS:
                value = live.student.run(getattr, module, name, None)
                if name == "num_batches_tracked" and isinstance(value, torch.Tensor) and value.numel() <= 4:
                    # As plain data: a tensor costs the judge's safe unpickler about a millisecond.
                    buffers[name] = {"counter": value.detach().cpu().tolist(), "dtype": str(value.dtype),
                                     "device": value.device.type}
                else:
                    buffers[name] = snap(value) if isinstance(value, torch.Tensor) else live.student.run(
                        _buffer_text, module, name)
                history[name] = grad_facts(value)
            live.seen[f"{key}.buffers"], live.seen[f"{key}.history"] = buffers, history
        except StudentRaised as exc:
            live.seen[f"{key}.error"] = dataclasses.asdict(exc.error)
            stopped.add(r)


# -- the expected values: nn.BatchNorm1d itself; and what catalogued mistakes would give ------------
@judge_only
def _norm_trace(run: NormRun, inputs: dict[tuple[int, int], Any]) -> list[dict[str, Any]]:
    """nn.BatchNorm1d(features, eps, momentum, affine=False) in float64 taking the run's steps: per step the
    output, x.grad after a backward, and the buffers."""
    bn = nn.BatchNorm1d(run.features, eps=run.eps, momentum=run.momentum, affine=False, dtype=torch.float64)
    trace = []
    for s, step in enumerate(run.steps):
        if step.kind == "load":
            bn.load_state_dict({k: v.double() if v.is_floating_point() else v for k, v in inputs[(0, s)].items()})
            trace.append({"buffers": _state(bn)})
            continue
        bn.train(step.kind == "train")
        x, upstream = inputs[(0, s)]
        x = x.detach().cpu().double().clone().requires_grad_(step.grad == "backward")
        y = bn(x)
        entry = {"out": y.detach().clone()}
        if step.grad == "backward":
            (y * upstream.cpu().double()).sum().backward()
            entry["grad"] = x.grad
        entry["buffers"] = _state(bn)
        trace.append(entry)
    return trace


NORM_MISTAKES: dict[str, str] = {
    "eps_outside": "eps is added outside the square root: divide by sqrt(var + eps), not sqrt(var) + eps",
    "unbiased_normalise": "training mode normalises with the UNBIASED variance (x.var(0) divides by N - 1 by default); "
                          "it normalises with the biased one (unbiased=False); only running_var gets the unbiased one",
    "no_eps": "eps is missing from the normalisation: divide by sqrt(var + eps)",
    "divide_by_var": "the output is divided by the variance; divide by its square root, sqrt(var + eps)",
    "only_centred": "the batch is only centred: after subtracting the mean, divide by sqrt(var + eps)",
    "train_uses_running": "training mode normalises with the running statistics; it uses the batch's own mean and "
                          "biased variance (the running buffers are for eval mode)",
    "hardcoded_eps": "eps=1e-5 is used instead of the eps given to __init__ (hard-coded?)",
    "eval_uses_batch": "eval mode normalises with the batch's own statistics; in eval mode (self.training is False) "
                       "use running_mean and running_var",
    "eval_no_eps": "eval mode leaves out eps: divide by sqrt(running_var + eps)",
    "eval_updates": "eval mode updates the buffers too; eval mode must change nothing",
    "biased_running_var": "running_var is updated with the BIASED batch variance; BatchNorm feeds the UNBIASED "
                          "variance (var * N / (N - 1)) into running_var",
    "momentum_reversed": "momentum is applied the wrong way round: running = (1 - momentum) * running + momentum * "
                         "batch_value (momentum weighs the NEW batch)",
    "replace_running": "the running statistics are replaced by the batch's instead of blended",
    "var_not_updated": "running_var is never updated in training mode",
    "none_as_default": "momentum=None is treated as 0.1; None means a cumulative (equal-weight) average: factor = "
                       "1 / num_batches_tracked, counted after incrementing it",
    "cumulative_off_by_one": "the cumulative factor is off by one: with num_batches_tracked already incremented, "
                             "use 1 / num_batches_tracked (the first batch gets factor 1)",
    "weighted_by_size": "momentum=None weights the batches by their size; it averages the BATCHES equally: factor = "
                        "1 / num_batches_tracked",
    "zero_as_none": "momentum=0.0 is treated like None (a cumulative average): `if self.momentum:` is False for "
                    "0.0; test `self.momentum is None`",
    "hardcoded_momentum": "momentum 0.1 is used instead of the momentum given to __init__ (hard-coded?)",
    "eps_in_running_var": "eps is added to the variance stored in running_var; eps only goes into the "
                          "normalisation's sqrt(var + eps)",
    "std_in_running_var": "running_var is updated with the standard deviation, not the variance",
    "no_count": "num_batches_tracked is not incremented: add 1 for every batch seen in training mode",
    "counter_not_loaded": "the cumulative factor counts the batches this object has seen, not num_batches_tracked: "
                          "after load_state_dict the average must continue from the loaded count",
}


@judge_only
def _norm_simulate(run: NormRun, inputs: dict[tuple[int, int], Any], mistake: str) -> list[dict[str, Any]]:
    """The run's steps as a module with one catalogued ``mistake`` would take them (float64, outputs and
    buffers; None where that module would raise)."""
    rm, rv = torch.zeros(run.features, dtype=torch.float64), torch.ones(run.features, dtype=torch.float64)
    count, own, seen_samples = 0, 0, 0
    eps = 1e-5 if mistake == "hardcoded_eps" else run.eps
    trace = []
    for s, step in enumerate(run.steps):
        if step.kind == "load":
            state = inputs[(0, s)]
            rm, rv = state["running_mean"].double().clone(), state["running_var"].double().clone()
            count = int(state["num_batches_tracked"])
            trace.append({"buffers": {"running_mean": rm, "running_var": rv,
                                      "num_batches_tracked": torch.tensor(count)}})
            continue
        x = inputs[(0, s)][0].detach().cpu().double()
        n = x.shape[0]
        if step.kind == "eval" and mistake != "eval_uses_batch":
            if mistake == "eval_no_eps":
                out = (x - rm) / rv.sqrt()
            elif mistake == "eps_outside":
                out = (x - rm) / (rv.sqrt() + eps)
            elif mistake == "no_eps":
                out = (x - rm) / rv.sqrt()
            else:
                out = (x - rm) / (rv + eps).sqrt()
            if mistake != "eval_updates":
                trace.append({"out": out, "buffers": {"running_mean": rm, "running_var": rv,
                                                      "num_batches_tracked": torch.tensor(count)}})
                continue
        if n < 2:
            trace.append(None)  # a batch of one in training: BatchNorm raises
            break
        mean, var_b, var_u = x.mean(0), x.var(0, unbiased=False), x.var(0, unbiased=True)
        before = (rm, rv)
        if mistake != "no_count":
            count += 1
        own += 1
        momentum = run.momentum
        if mistake == "hardcoded_momentum" or (mistake == "none_as_default" and momentum is None):
            momentum = 0.1
        if mistake == "zero_as_none" and momentum == 0:
            momentum = None
        if momentum is None:
            k = own if mistake == "counter_not_loaded" else count
            factor = {"cumulative_off_by_one": 1 / (k + 1), "weighted_by_size": n / (seen_samples + n)}.get(
                mistake, 1 / k if k else math.inf)
        else:
            factor = momentum
        seen_samples += n
        if mistake == "replace_running":
            factor = 1.0
        new_var = {"biased_running_var": var_b, "eps_in_running_var": var_u + eps,
                   "std_in_running_var": var_u.sqrt()}.get(mistake, var_u)
        if mistake == "momentum_reversed":
            rm, rv = factor * rm + (1 - factor) * mean, factor * rv + (1 - factor) * new_var
        else:
            rm, rv = (1 - factor) * rm + factor * mean, (1 - factor) * rv + factor * new_var
        if mistake == "var_not_updated":
            rv = before[1]
        if mistake == "train_uses_running":
            out = (x - before[0]) / (before[1] + eps).sqrt()
        else:
            var = var_u if mistake == "unbiased_normalise" else var_b
            out = {"eps_outside": lambda: (x - mean) / (var.sqrt() + eps), "no_eps": lambda: (x - mean) / var.sqrt(),
                   "divide_by_var": lambda: (x - mean) / (var + eps), "only_centred": lambda: x - mean}.get(
                mistake, lambda: (x - mean) / (var + eps).sqrt())()
        trace.append({"out": out, "buffers": {"running_mean": rm, "running_var": rv,
                                              "num_batches_tracked": torch.tensor(count)}})
    return trace


def _norm_tolerances(run: NormRun, inputs: dict[tuple[int, int], Any], s: int,
                     want: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Per-element tolerances for step ``s``'s output, x.grad and buffers, against BatchNorm1d's ``want``.

    Besides a base tolerance (float64: 1e-6 relative; float32: 1e-4), each grows with how ill-conditioned the
    data is, so that every correct way of computing the statistics passes (x.var, or the mean of squares minus
    the squared mean): rounding in the variance scales with mean(x**2), not with the variance, and a batch of
    two close values has a variance far below its mean square."""
    eps_dtype = torch.finfo(run.dtype).eps * 64
    base = 1e-6 if run.double else 1e-4
    msq = torch.zeros(run.features, dtype=torch.float64)  # the largest mean square of any batch so far
    for t, step in enumerate(run.steps[:s + 1]):
        if step.kind == "load":
            state = inputs[(0, t)]
            msq = torch.maximum(msq, state["running_mean"].double() ** 2 + state["running_var"].double())
        elif step.n:
            msq = torch.maximum(msq, (inputs[(0, t)][0].detach().double() ** 2).mean(0))
    rv = want["buffers"]["running_var"]
    # The buffers: a momentum=None factor computed as a float32 tensor (1.0 / num_batches_tracked) is correct
    # too, and rounds each blend at float32's 6e-8 relative; 4e-6 of the values' scale covers a few steps of it.
    buffers = 4e-6 if run.double else 1e-4
    tolerances = {"running_mean": 1e-12 + buffers * (want["buffers"]["running_mean"].abs() + msq.sqrt())
                  + eps_dtype * msq.sqrt(),
                  "running_var": 1e-12 + buffers * (rv.abs() + msq) + eps_dtype * msq}
    step = run.steps[s]
    if step.kind == "load":
        return tolerances
    x = inputs[(0, s)][0].detach().double()
    out = want["out"]
    if step.kind == "train":
        cond = ((x ** 2).mean(0) + run.eps) / (x.var(0, unbiased=False) + run.eps)
    else:
        cond = (msq + run.eps) / (rv + run.eps)
    relative = base + eps_dtype * cond
    tolerances["out"] = (1e-9 if run.double else 1e-5) + relative * out.abs() + eps_dtype * cond.sqrt()
    if step.kind == "eval":  # the buffers' own tolerance, carried through (x - running_mean) / sqrt(running_var + eps)
        tolerances["out"] = tolerances["out"] + tolerances["running_mean"] / (rv + run.eps).sqrt() + \
            out.abs() * tolerances["running_var"] / (2 * (rv + run.eps))
    if "grad" in want:
        grad = want["grad"]
        scale = float(grad.abs().max()) if grad.numel() else 0.0
        tolerances["grad"] = (1e-9 + 1e-6 * scale if run.double else 1e-4 * (1 + scale)) + (
            relative * 10) * grad.abs() + eps_dtype * cond * scale
    return tolerances


def _norm_close(got: torch.Tensor, want: torch.Tensor, tolerance: torch.Tensor) -> bool:
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(want.shape):
        return False
    a, b = got.detach().cpu().double(), want.detach().cpu().double()
    return bool((((a - b).abs() <= tolerance) | (a.isnan() & b.isnan()) | (a == b)).all())


def _norm_difference(got: torch.Tensor, want: torch.Tensor, tolerance: torch.Tensor) -> str:
    a, b = got.detach().cpu().double(), want.detach().cpu().double()
    bad = ~(((a - b).abs() <= tolerance) | (a.isnan() & b.isnan()) | (a == b))
    error = torch.where(bad, (a - b).abs().nan_to_num(nan=math.inf), torch.zeros_like(a))
    flat = int(error.reshape(-1).argmax())
    index = [int(i) for i in torch.unravel_index(torch.tensor(flat), a.shape)] if a.dim() else []
    return (f"{int(bad.sum())} of {a.numel()} elements differ; the largest difference is at index {index}: expected "
            f"{show_number(b.reshape(-1)[flat].item())}, returned {show_number(a.reshape(-1)[flat].item())} "
            f"(tolerance {show_number(tolerance.expand_as(b).reshape(-1)[flat].item())})")


def _norm_step_problem(run: NormRun, step: NormStep, seen: Seen, key: str, want: dict[str, Any],
                       device: torch.device, tol: dict[str, torch.Tensor]) -> str | None:
    """What the step got wrong (None: nothing), against BatchNorm1d's ``want``."""
    if step.kind != "load":
        got = seen[f"{key}.out"]
        expected = want["out"]
        if not isinstance(got, torch.Tensor):
            return f"forward returned {show(got)}, a {type_name(got)}; it must return a tensor"
        if tuple(got.shape) != tuple(expected.shape):
            return f"the output has shape {tuple(got.shape)} instead of {tuple(expected.shape)}"
        if got.device.type != device.type or got.dtype != run.dtype:
            return (f"the output is {dtype_name(got.dtype)} on {got.device.type}, the input "
                    f"{dtype_name(run.dtype)} on {device.type}")
        if not _norm_close(got, expected, tol["out"]):
            return "the output differs: " + _norm_difference(got, expected, tol["out"])
        if step.grad == "backward":
            grad = seen.get(f"{key}.grad")
            if grad is None:
                return "after (out * r).sum().backward(), x.grad is None: no gradient reached x"
            if not _norm_close(grad, want["grad"], tol["grad"]):
                return "x.grad differs from BatchNorm1d's: " + _norm_difference(grad, want["grad"], tol["grad"])
    buffers, history = seen[f"{key}.buffers"], seen[f"{key}.history"]
    for name in _BUFFERS:
        value, right = buffers[name], want["buffers"][name]
        if not isinstance(value, torch.Tensor):
            return f"{name} is {value}; it must be a registered buffer"
        where = buffers.get(f"{name}_device", value.device.type)
        if name == "num_batches_tracked":
            right_kind = value.dtype == torch.int64
        else:  # float32 modules may keep float64 statistics; after .double() every float buffer is float64
            right_kind = value.dtype == torch.float64 if run.double else value.is_floating_point()
        if not right_kind or where != device.type:
            kind = "int64" if name == "num_batches_tracked" else dtype_name(run.dtype)
            return f"{name} is {dtype_name(value.dtype)} on {where}; expected {kind} on {device.type}"
        if tuple(value.shape) != tuple(right.shape):
            return f"{name} has shape {tuple(value.shape)}, expected {tuple(right.shape)}"
        if name == "num_batches_tracked":
            if int(value) != int(right):
                return f"num_batches_tracked is {int(value)}, expected {int(right)}"
        elif not _norm_close(value, right, tol[name]):
            return f"{name} differs: " + _norm_difference(value, right, tol[name])
        facts = history[name]
        if facts and (facts["requires_grad"] or facts["grad_fn"] is not None):
            return (f"{name} holds autograd history (requires_grad={facts['requires_grad']}, grad_fn="
                    f"{facts['grad_fn']}): update the buffers under torch.no_grad() or from detached values")
    return None


def _norm_fits(run: NormRun, seen: Seen, r: int, simulated: list[Any], tolerances: list[dict[str, Any]]) -> bool:
    """Whether the run's observations (outputs and buffers, up to where it raised) are the simulated ones."""
    for s, (step, sim) in enumerate(zip(run.steps, simulated + [None] * len(run.steps))):
        tol = tolerances[s]
        key = f"{r}.{s}"
        if f"{key}.error" in seen:
            return sim is None
        if f"{key}.buffers" not in seen:
            return True  # not reached
        if sim is None:
            return False
        if step.kind != "load":
            got = seen.get(f"{key}.out")
            if not _norm_close(got, sim["out"], tol["out"]):
                return False
        for name in _BUFFERS:
            value = seen[f"{key}.buffers"][name]
            if not isinstance(value, torch.Tensor) or value.shape != sim["buffers"][name].shape:
                return False
            if name == "num_batches_tracked":
                if int(value) != int(sim["buffers"][name]):
                    return False
            elif not _norm_close(value, sim["buffers"][name], tol[name]):
                return False
    return True


@judge_only
def _norm_cause(runs: list[NormRun], inputs: list[dict[tuple[int, int], Any]], seen: Seen,
                tolerances: list[list[dict[str, Any]]]) -> str | None:
    """The one catalogued mistake whose simulated module gives the student's observations on every run (it
    cannot give BatchNorm1d's on the failing ones); None when none or several do."""
    fitting = []
    for mistake, cause in NORM_MISTAKES.items():
        if all(_norm_fits(run, seen, r, _norm_simulate(run, inputs[r], mistake), tolerances[r])
               for r, run in enumerate(runs)):
            fitting.append(cause)
    return fitting[0] if len(fitting) == 1 else None


def _norm_step_text(run: NormRun, step: NormStep, x: Any, switch: str = "") -> str:
    if step.kind == "load":
        state = x
        return (f"m.load_state_dict({{'running_mean': <{run.features} values>, 'running_var': <{run.features} "
                f"values>, 'num_batches_tracked': tensor({int(state['num_batches_tracked'])})}})")
    x = x[0]
    grad = {"plain": "", "requires_grad": ", requires_grad=True", "backward": ", requires_grad=True; then "
            "(out * r).sum().backward()"}[step.grad]
    mode = "training" if step.kind == "train" else "eval"
    return f"{switch}out = m(x) in {mode} mode, x = {describe_tensor(x)}{grad}"


@RUNNING_NORM_EXERCISE.check(points=1)
def generated_runs(student: Submission, device: torch.device) -> None:
    """Generated runs over the whole domain (num_features 1 to 130, every momentum and eps form, float32/float64,
    training and eval batches of any size and layout, mode switches, load_state_dict, inputs requiring grad and
    backward, several modules at once): every output, x.grad and buffer is nn.BatchNorm1d(affine=False)'s."""
    with one_torch_thread():
        runs = domain.draw(norm_run, 24, size=lambda run: (len(run.steps), run.features,
                                                          sum(st.n for st in run.steps)))
        inputs = []
        for run in runs:
            per = {}
            for s, step in enumerate(run.steps):
                per[(0, s)] = norm_state(run, step) if step.kind == "load" else (norm_batch(run, step),
                                                                                  norm_upstream(run, step))
            inputs.append(per)
        sent: dict[tuple[int, int], Any] = {}
        for r, per in enumerate(inputs):
            for (_, s), value in per.items():
                sent[(r, s)] = ({k: v.to(device) for k, v in value.items()} if isinstance(value, dict)
                                else tuple(v.to(device) for v in value))
        shuffler = domain.rng()

        def order(first: int, stop: int) -> list[tuple[int, int]]:
            """The runs' steps interleaved at random, each run's in its own order."""
            turns = [r for r in range(stop - first) for _ in runs[first + r].steps]
            shuffler.shuffle(turns)
            taken, steps = [0] * (stop - first), []
            for r in turns:
                steps.append((r, taken[r]))
                taken[r] += 1
            return steps

        seen = observe_chunks(student, _generated_runs_scenario, len(runs), lambda a, b: (
            runs[a:b], {k: v for k, v in sent.items() if a <= k[0] < b}, order(a, b), device, a),
            hint=_norm_error_hint, chunk=30)
        for key, value in seen.data.items():
            counter = value.get("num_batches_tracked") if key.endswith(".buffers") else None
            if isinstance(counter, dict):  # back to a tensor (its device said apart)
                value["num_batches_tracked"] = torch.tensor(counter["counter"], dtype=getattr(
                    torch, counter["dtype"].removeprefix("torch."), torch.float64))
                value["num_batches_tracked_device"] = counter["device"]
        failures, tolerances = [], []
        for r, run in enumerate(runs):
            trace = _norm_trace(run, inputs[r])
            tolerances.append([_norm_tolerances(run, inputs[r], s, want) for s, want in enumerate(trace)])
            for s, (step, want) in enumerate(zip(run.steps, trace)):
                key = f"{r}.{s}"
                if f"{key}.error" in seen:
                    failures.append((r, s, None))
                    break
                problem = _norm_step_problem(run, step, seen, key, want, device, tolerances[r][s])
                if problem:
                    failures.append((r, s, problem))
                    break
        if not failures:
            return
        r, s, problem = min(failures, key=lambda f: (f[1], runs[f[0]].features, sum(
            st.n for st in runs[f[0]].steps[:f[1] + 1])))
        run = runs[r]
        lines = [f"m = {run.built}" + (".double()" if run.double else "")]
        training = True
        for t, step in enumerate(run.steps[:s + 1]):
            switch = ""
            if step.kind != "load" and training != (step.kind == "train"):
                training = step.kind == "train"
                switch = f"m.train({training}); "
            lines.append(_norm_step_text(run, step, inputs[r][(0, t)], switch))
        call = "\n    ".join(lines)
        if problem is None:
            error = StudentError(**seen.data[f"{r}.{s}.error"])
            cause = _norm_error_hint(error, call) if error.kind == "raised" else None
            if cause:
                fail(f"{len(failures)} of {len(runs)} generated runs failed; the smallest:\n    {call}\n  failed: "
                     f"{error.describe()}\n  likely cause: {cause}")
            raise StudentCodeError(error, f"the last step of\n    {call}\n ")
        cause = _norm_cause(runs, inputs, seen, tolerances)
        fail(f"{len(failures)} of {len(runs)} generated runs differ from nn.BatchNorm1d({run.features}, eps={run.eps}, "
             f"momentum={run.momentum}, affine=False) taking the same steps; the smallest:\n    {call}\n"
             f"  at the last step: {problem}" + (f"\n  likely cause: {cause}" if cause else ""))
