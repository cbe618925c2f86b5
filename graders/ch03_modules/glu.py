"""GLU(in_features, out_features, bias=True): a gated linear layer, graded against F.glu(F.linear(...)).

The student's module lives only in the runner. The scenarios below run there: they build it, read its
own parameters *before* its forward runs, call forward / backward / ``.to()`` / ``.double()`` /
``state_dict()`` and return what they saw. The judge computes every expected value from those returned
parameters and its own copy of the inputs, with ``F.glu(F.linear(x, weight, bias), dim=-1)``, and names
known mistakes by comparing the output with what a known wrong computation gives on the same input.

:class:`Live`, :func:`observing`, :class:`Seen` and :func:`observe` are shared with ``running_norm``: a
scenario records observations step by step; when the student's code raises at some step, the
observations made so far still come back, with the facts of the error and the step it happened in.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from graders.compare import (close, describe_tensor, difference, dtype_name, one_torch_thread, show, show_number,
                             type_name)
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise, judge_only
from graders.student import Submission

GLU_EXERCISE = exercise("glu", chapter="03_modules", names=["GLU"])
_GLU_RTOL, _GLU_ATOL = 1e-4, 1e-5  # float32; a different but correct order of operations stays far inside
_GLU64_RTOL, _GLU64_ATOL = 1e-10, 1e-12


# ==================================================================================================
# Shared with running_norm: scenarios that observe step by step, and the judge's view of what they saw
# ==================================================================================================
def call_text(name: str, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None) -> str:
    shown = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in (kwargs or {}).items()]
    return f"{name}({', '.join(shown)})"


class Live:
    """Inside the runner: reaches the student's code step by step and remembers which step runs."""

    def __init__(self, student: RunnerStudent) -> None:
        self.student = student
        self.at = "your code"
        self.seen: dict[str, Any] = {}

    def run(self, at: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.at = at
        return self.student.run(function, *args, **kwargs)

    def build(self, name: str, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None) -> nn.Module:
        """Construct the student's module ``name(*args, **kwargs)``; anything but an nn.Module fails the check."""
        label = call_text(name, args, kwargs)
        module = self.run(label, self.student.get(name), *args, **(kwargs or {}))
        if not isinstance(module, nn.Module):
            fail(f"{label} made an object of type {type(module).__name__}, which is not an nn.Module; {name} must "
                 f"be a class that subclasses nn.Module (class {name}(nn.Module): ...)")
        return module


def observing(body: Callable[..., None]) -> Callable[..., dict[str, Any]]:
    """Make ``body(live, *args)`` a scenario: it records into ``live.seen``, which is returned even when the
    student's code raises part-way (then with ``error``, the facts, and ``error_at``, the step)."""

    @functools.wraps(body)
    def scenario(student: RunnerStudent, *args: Any, **kwargs: Any) -> dict[str, Any]:
        live = Live(student)
        try:
            body(live, *args, **kwargs)
        except StudentRaised as exc:
            live.seen["error"] = dataclasses.asdict(exc.error)
            live.seen["error_at"] = live.at
        return live.seen

    return scenario


def snap(value: Any) -> Any:
    """A copy of a tensor as it is now (later in-place updates do not reach it); other values as they are."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    return value


def grad_facts(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, torch.Tensor):
        return None
    return {"requires_grad": bool(value.requires_grad),
            "grad_fn": type(value.grad_fn).__name__ if value.grad_fn is not None else None}


Hint = Callable[[StudentError, str], "str | None"]


class Seen:
    """In the judge: what a scenario observed. Reading an observation the scenario never made (because the
    student's code raised first) ends the check with that error, said of the step that raised."""

    def __init__(self, data: dict[str, Any], hint: Hint | None = None) -> None:
        self.data = data
        self.hint = hint

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def __getitem__(self, key: str) -> Any:
        if key not in self.data:
            self.raise_error()
            raise KeyError(f"the scenario recorded no {key!r}")  # a grader bug: reported as such
        return self.data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def raise_error(self) -> None:
        if "error" not in self.data:
            return
        error = StudentError(**self.data["error"])
        at = self.data.get("error_at") or "your code"
        cause = self.hint(error, at) if self.hint and error.kind == "raised" else None
        if cause:
            fail(f"{at} failed: {error.describe()}\n  likely cause: {cause}")
        raise StudentCodeError(error, at)


def observe(student: Submission, scenario: Callable[..., Any], *args: Any, hint: Hint | None = None,
            **kwargs: Any) -> Seen:
    return Seen(student.scenario(scenario, *args, **kwargs), hint)


def constructor_hint(error: StudentError, at: str) -> str | None:
    if "before Module.__init__() call" in error.exception_message:
        return ("call super().__init__() first in __init__, before any Parameter, buffer or submodule is "
                "assigned")
    return None


def check_tensor_output(what: str, given: str, got: Any, expected: torch.Tensor, device: torch.device, *,
                        rtol: float, atol: float, shape_cause: str | None = None,
                        value_cause: Callable[[], str | None] | None = None) -> torch.Tensor:
    """Type, shape, device, dtype and values of a module's output against ``expected``."""
    if not isinstance(got, torch.Tensor):
        fail(f"{what}\n  input: {given}\n  forward returned {show(got)}, a {type_name(got)}; it must return a "
             "tensor")
    if tuple(got.shape) != tuple(expected.shape):
        fail_mismatch(what, given=given, expected=f"shape {tuple(expected.shape)}", got=f"shape {tuple(got.shape)}",
                      cause=shape_cause)
    if got.device.type != device.type:
        fail(f"{what}\n  input: {given}\n  the output is on {got.device.type}, the input on {device.type} (the "
             "usual ways: a tensor created in forward without device=x.device, or a tensor kept as a plain "
             "attribute, which .to() leaves behind)")
    if got.dtype != expected.dtype:
        fail_mismatch(what, given=given, expected=f"dtype {dtype_name(expected.dtype)}",
                      got=f"dtype {dtype_name(got.dtype)}",
                      where="something in forward does not follow the input's dtype (the usual ways: a tensor "
                            "created with the default dtype, torch.zeros(n) or torch.tensor(...), an explicit "
                            ".float(), or a Parameter/buffer that .double() did not convert because it is a plain "
                            "attribute)")
    if not close(got, expected, rtol=rtol, atol=atol):
        fail_mismatch(what, given=given, expected=show(expected), got=show(got),
                      where=difference(got, expected, rtol=rtol, atol=atol),
                      cause=value_cause() if value_cause else None)
    return got


def first_cause(got: torch.Tensor, candidates, right: torch.Tensor, *, rtol: float, atol: float) -> str | None:
    """The cause of the one known-wrong result that ``got`` equals (and the right answer does not); None when
    none or several do: two mistakes that give the same output here cannot be told apart by it."""
    causes = []
    for wrong, cause in candidates:
        try:
            wrong = wrong() if callable(wrong) else wrong
        except RuntimeError:  # that wrong computation is impossible for this input
            continue
        if wrong is None:
            continue
        if close(got, wrong, rtol=rtol, atol=atol) and not close(right, wrong, rtol=rtol, atol=atol):
            causes.append(cause)
    return causes[0] if len(set(causes)) == 1 else None


# ==================================================================================================
# GLU, inside the runner
# ==================================================================================================
def _find_parameter(module: nn.Module, name: str) -> torch.Tensor | None:
    """The module's own tensor ``name``; else its only ``*.name`` Parameter in a submodule (an nn.Linear
    inside), so that the forward checks still grade the forward pass (parameters_registered reports it)."""
    value = getattr(module, name, None)
    if isinstance(value, torch.Tensor):
        return value
    nested = [p for n, p in module.named_parameters() if n.endswith("." + name)]
    return nested[0] if len(nested) == 1 else None


def _attribute_text(module: nn.Module, name: str) -> str:
    if not hasattr(module, name):
        return "missing"
    value = getattr(module, name)
    if isinstance(value, torch.Tensor):
        return f"a {type(value).__name__} of shape {tuple(value.shape)}"
    return show(value) if value is None or isinstance(value, (int, float, str, bool)) else f"a {type(value).__name__}"


def _make_usable(value: torch.Tensor, in_f: int) -> None:
    """Refill, in place, a parameter that holds non-finite or huge values (an uninitialised torch.empty).

    The forward checks compare the output with F.glu on the module's own parameters; with garbage values
    both sides overflow and NaN never equals NaN, so a right forward would fail for what is an
    initialisation mistake (which init_like_linear reports). Uniform values like nn.Linear's let the
    forward checks grade the forward pass.
    """
    if not value.is_floating_point() or value.device.type == "meta":
        return
    with torch.no_grad():
        if not bool(torch.isfinite(value).all()) or (value.numel() and value.abs().max().item() > 1e4):
            bound = 1 / math.sqrt(max(in_f, 1))
            value.uniform_(-bound, bound)


def _record_parameters(live: Live, module: nn.Module, key: str, label: str, in_f: int, *,
                       usable: bool = True) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Record (copies of) the weight and bias the module will compute with, as they are before forward."""
    names = live.run(f"{label}.named_parameters()", lambda: [n for n, _ in module.named_parameters()])
    live.seen[f"{key}.names"] = names
    found = []
    for name in ("weight", "bias"):
        value = live.run(f"reading {label}.{name}", _find_parameter, module, name)
        if value is not None and usable:
            _make_usable(value, in_f)
        live.seen[f"{key}.{name}"] = snap(value)
        live.seen[f"{key}.{name}_attr"] = live.run(f"reading {label}.{name}", _attribute_text, module, name)
        found.append(value)
    return found[0], found[1]


def _record_forward(live: Live, module: nn.Module, key: str, label: str, x: torch.Tensor) -> Any:
    out = live.run(f"{label}(x = {describe_tensor(x)})", module, x)
    live.seen[f"{key}.out"] = snap(out)
    live.seen[f"{key}.out_facts"] = grad_facts(out)
    return out


@observing
def _forward_cases(live: Live, cases: list[tuple[tuple, dict, list[torch.Tensor]]], device: torch.device,
                   double: bool = False) -> None:
    """For each (args, kwargs, inputs): build GLU(*args, **kwargs), .to(device) (and .double()), record its
    parameters, then its output for every input."""
    for i, (args, kwargs, inputs) in enumerate(cases):
        label = call_text("GLU", args, kwargs)
        module = live.build("GLU", args, kwargs)
        live.run(f"{label}.to({device.type!r})", module.to, device)
        if double:
            live.run(f"{label}.double()", module.double)
        _record_parameters(live, module, str(i), label, args[0])
        for j, x in enumerate(inputs):
            _record_forward(live, module, f"{i}.{j}", label, x)


# ==================================================================================================
# GLU, in the judge
# ==================================================================================================
def _glu_reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """What the spec asks for, from PyTorch itself: F.glu(x @ weight.T + bias, dim=-1), in float64."""
    x, weight = x.detach().cpu().double(), weight.detach().cpu().double()
    bias = bias.detach().cpu().double() if bias is not None else None
    return F.glu(F.linear(x, weight, bias), dim=-1)


def _own_parameter(seen: Seen, key: str, name: str, label: str) -> torch.Tensor:
    """The tensor the module computes with as ``name`` (its own, or its only nested one); fails if none."""
    value = seen[f"{key}.{name}"]
    if isinstance(value, torch.Tensor):
        return value
    names = seen[f"{key}.names"]
    nested = [n for n in names if n.endswith("." + name)]
    if nested:
        fail(f"{label} has no Parameter `{name}` of its own; its parameters are named {names}\n"
             f"  likely cause: the weights live in a submodule (an nn.Linear inside, as `{nested[0]}`); the spec "
             f"asks for GLU's own nn.Parameter `{name}`, so that state_dict() has exactly `weight` and `bias`")
    fail(f"{label}.{name} is {seen[f'{key}.{name}_attr']}; it must be an nn.Parameter (its parameters are named "
         f"{names or 'nothing'})\n  likely cause: the Parameter was given another name, or never assigned to "
         f"self.{name}")


def _glu_parameters(seen: Seen, key: str, label: str, in_f: int, out_f: int, *,
                    bias: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The weight and bias the module computed with (shapes checked): what the expected value comes from."""
    weight = _own_parameter(seen, key, "weight", label)
    b = _own_parameter(seen, key, "bias", label) if bias else None
    for name, value, shape in [("weight", weight, (2 * out_f, in_f)), ("bias", b, (2 * out_f,))]:
        if value is not None and tuple(value.shape) != shape:
            fail(f"{label}.{name} has shape {tuple(value.shape)}, expected {shape} (see parameters_registered); "
                 "the output is compared with F.glu(F.linear(x, weight, bias)), which needs that shape")
    return weight, b


def _glu_shape_cause(x_shape: tuple[int, ...], out_features: int, got: tuple[int, ...]) -> str | None:
    lead = tuple(x_shape[:-1])
    if got == lead + (2 * out_features,):
        return ("the output has 2 * out_features features: h was returned whole (or a and g concatenated); the "
                "output is a * sigmoid(g), with out_features features")
    for d in range(len(lead)):
        if lead[d] % 2 == 0 and lead[d] > 0:
            halved = list(lead) + [2 * out_features]
            halved[d] //= 2
            if got == tuple(halved):
                return (f"h was split along dim {d}, a batch dim, instead of the LAST dim: split with "
                        "h.chunk(2, dim=-1), or h[..., :out_features] and h[..., out_features:]")
    if len(lead) == 0 and got == (1, out_features):
        return ("a 1-D input (in_features,) must give a 1-D output (out_features,): a batch dim added with "
                "unsqueeze(0) (or reshape(1, -1)) was never removed")
    if len(lead) != 1 and got == (math.prod(lead), out_features):
        return ("the leading dims were flattened and not restored: reshape the output back to "
                "x.shape[:-1] + (out_features,)")
    return None


def _glu_value_cause(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, got: torch.Tensor,
                     rtol: float, atol: float, stray_bias: Any = None) -> str | None:
    x, weight = x.detach().cpu().double(), weight.detach().cpu().double()
    bias = bias.detach().cpu().double() if bias is not None else None
    h = F.linear(x, weight, bias)
    half = weight.shape[0] // 2
    a, g = h[..., :half], h[..., half:]
    right = a * torch.sigmoid(g)
    candidates = []
    if bias is None and isinstance(stray_bias, torch.Tensor) and stray_bias.shape == (weight.shape[0],):
        candidates.append((lambda: F.glu(F.linear(x, weight, stray_bias.detach().cpu().double()), dim=-1),
                           "the module was built with bias=False, yet it adds a bias: with bias=False there is no "
                           "bias at all (see no_bias)"))
    candidates += [
        (g * torch.sigmoid(a), "the halves are swapped: a is the FIRST half of h (h[..., :out_features]) and the "
                               "gate g, the one that goes through sigmoid, is the SECOND"),
        (lambda: h[..., 0::2] * torch.sigmoid(h[..., 1::2]),
         "h was split into every other feature (interleaved) instead of its first and second halves: use "
         "h.chunk(2, dim=-1)"),
        (a * torch.tanh(g), "the gate uses tanh; GLU gates with sigmoid: a * sigmoid(g)"),
        (lambda: a * torch.softmax(g, dim=-1), "the gate uses softmax over the features; GLU gates each feature "
                                               "on its own with sigmoid: a * sigmoid(g)"),
        (a * g, "the gate g must go through sigmoid: the output is a * sigmoid(g), not a * g"),
        (torch.sigmoid(a * g), "sigmoid was applied to the product; the output is a * sigmoid(g)"),
        (torch.sigmoid(a) * torch.sigmoid(g), "sigmoid was applied to both halves; only the gate g goes through "
                                              "sigmoid: a * sigmoid(g)"),
    ]
    if bias is not None:
        h0 = F.linear(x, weight)
        a0, g0 = h0[..., :half], h0[..., half:]
        candidates += [
            (a0 * torch.sigmoid(g0), "the bias was not added: h = x @ weight.T + bias"),
            ((a0 + bias[:half]) * torch.sigmoid(g0), "the bias was added to the first half a only; h = x @ weight.T "
                                                     "+ bias adds all 2 * out_features entries, to a and to g"),
            (a0 * torch.sigmoid(g0 + bias[half:]), "the bias was added to the gate g only; h = x @ weight.T + bias "
                                                   "adds all 2 * out_features entries, to a and to g"),
            (lambda: F.glu(h + bias, dim=-1), "the bias was added twice: F.linear(x, weight, bias) (or nn.Linear) "
                                              "already adds it"),
        ]
    return first_cause(got, candidates, right, rtol=rtol, atol=atol)


def _glu_error_hint(error: StudentError, at: str) -> str | None:
    message = error.exception_message
    cause = constructor_hint(error, at)
    if cause:
        return cause
    if "values to unpack" in message:
        return ("h must be split into exactly two halves along the last dim: h.chunk(2, dim=-1), or "
                "h.split(out_features, dim=-1) (h.split(2, dim=-1) makes pieces of size 2, not 2 pieces)")
    if "view size is not compatible" in message:
        return ("x.view(...) needs a layout it can reinterpret, and the input is not contiguous here (a transposed, "
                "sliced or expanded tensor is a valid input): use x.reshape(...) (or flatten), which copies only "
                "when it must")
    if "cannot be multiplied" in message or "size mismatch" in message or "must match the size" in message:
        return ("weight has shape (2 * out_features, in_features), like nn.Linear's: h = x @ weight.T + bias "
                "(or F.linear(x, weight, bias)); x.T reverses EVERY dim of an input with more than 2 dims, so "
                "transpose the weight, not x; also split h along the LAST dim")
    if "too many indices" in message or "out of range" in message:
        return ("index the feature dim from the end (h[..., :out_features], h.chunk(2, dim=-1)): with any number "
                "of leading dims, including none, the features are always the last dim")
    if "same dtype" in message or "expected scalar type" in message or "expected dtype" in message \
            or "same device" in message or "found at least two devices" in message:
        return ("a tensor in forward has another dtype or device than x: weight and bias must be nn.Parameters (a "
                "plain tensor attribute is left behind by .to()/.double()), and forward must not create or cast "
                "tensors to a fixed dtype or device (torch.zeros(n), .float(), .cpu())")
    return None


def _expect_glu(seen: Seen, key: str, label: str, x: torch.Tensor, in_f: int, out_f: int, what: str,
                device: torch.device, *, bias: bool = True, rtol: float = _GLU_RTOL,
                atol: float = _GLU_ATOL, weight: torch.Tensor | None = None,
                bias_value: torch.Tensor | None = None, stray_bias: Any = None) -> torch.Tensor:
    """The output recorded as ``key.out`` against F.glu on the parameters the module held before forward
    (recorded under ``key``, or given: ``weight`` / ``bias_value``). ``stray_bias``: a bias the module has
    although it was built with bias=False (a known cause when the output is the one with that bias)."""
    if weight is None:
        weight, bias_value = _glu_parameters(seen, key, label, in_f, out_f, bias=bias)
    expected = _glu_reference(x, weight, bias_value).to(x.dtype)
    given = f"x = {describe_tensor(x)}, {label} with its own weight" + (" and bias" if bias_value is not None else "")
    got = seen[f"{key}.out"]
    return check_tensor_output(
        what, given, got, expected, device, rtol=rtol, atol=atol,
        shape_cause=(_glu_shape_cause(tuple(x.shape), out_f, tuple(got.shape))
                     if isinstance(got, torch.Tensor) else None),
        value_cause=lambda: _glu_value_cause(x, weight, bias_value, got, rtol, max(atol, 1e-6), stray_bias))


def _case_label(args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> str:
    return call_text("GLU", args, kwargs)


# ==================================================================================================
# The checks
# ==================================================================================================
@observing
def _registration(live: Live, cases: list[tuple[int, int]], inputs: list[torch.Tensor], device: torch.device) -> None:
    for i, ((in_f, out_f), x) in enumerate(zip(cases, inputs)):
        label = call_text("GLU", (in_f, out_f))
        module = live.build("GLU", (in_f, out_f))
        named = live.run(f"{label}.named_parameters()", lambda: dict(module.named_parameters()))
        live.seen[f"{i}.names"] = list(named)
        for name in ("weight", "bias"):
            has = live.run(f"reading {label}.{name}", hasattr, module, name)
            value = live.run(f"reading {label}.{name}", getattr, module, name, None)
            live.seen[f"{i}.{name}.facts"] = {
                "has": has,
                "kind": ("parameter" if isinstance(value, nn.Parameter) else "tensor" if isinstance(value, torch.Tensor)
                         else "none" if value is None else "other"),
                "type": type(value).__name__,
                "text": live.run(f"reading {label}.{name}", _attribute_text, module, name),
                "registered": value is not None and named.get(name) is value,
                "shape": tuple(value.shape) if isinstance(value, torch.Tensor) else None,
                "requires_grad": bool(value.requires_grad) if isinstance(value, torch.Tensor) else None,
            }
        live.run(f"{label}.to({device.type!r})", module.to, device)
        _record_parameters(live, module, f"{i}.fwd", label, in_f)
        _record_forward(live, module, f"{i}.fwd", label, x)


@GLU_EXERCISE.check(points=1)
def parameters_registered(student: Submission, device: torch.device) -> None:
    """weight (2*out, in) and bias (2*out,) are the module's own nn.Parameters, and forward uses them."""
    cases = [(5, 3), (7, 2), (1, 1)]
    inputs = [torch.randn(4, in_f, device=device) for in_f, _ in cases]
    seen = observe(student, _registration, cases, inputs, device, hint=_glu_error_hint)
    for i, (in_f, out_f) in enumerate(cases):
        label = f"GLU({in_f}, {out_f})"
        names = seen[f"{i}.names"]
        for name, shape in [("weight", (2 * out_f, in_f)), ("bias", (2 * out_f,))]:
            facts = seen[f"{i}.{name}.facts"]
            nested = [n for n in names if n.endswith("." + name)]
            if facts["kind"] not in ("parameter", "tensor"):
                if nested:
                    fail(f"{label} has no Parameter `{name}` of its own; its parameters are named {names}\n"
                         f"  likely cause: the weights live in a submodule (an nn.Linear inside, as `{nested[0]}`); "
                         f"the spec asks for GLU's own nn.Parameter `{name}`, so that state_dict() has exactly "
                         "`weight` and `bias`")
                fail(f"{label}.{name} is {facts['text']}; it must be an nn.Parameter (its parameters are named "
                     f"{names or 'nothing'})\n  likely cause: the Parameter was given another name, or never "
                     f"assigned to self.{name}")
            if facts["kind"] != "parameter":
                fail(f"{label}.{name} is a plain {facts['type']}, not an nn.Parameter, so it is not registered: not "
                     "in parameters() (an optimiser never sees it), not in state_dict(), and .to()/.double() leave "
                     f"it behind\n  likely cause: self.{name} = torch.empty(...) without wrapping it: "
                     f"self.{name} = nn.Parameter(torch.empty(...))")
            if not facts["registered"]:
                fail(f"{label}.{name} is an nn.Parameter but not registered under the name `{name}` "
                     f"(named_parameters() gives {names})")
            got = tuple(facts["shape"])
            if got != shape:
                if name == "weight" and got == (in_f, 2 * out_f):
                    cause = ("the weight is transposed: like nn.Linear's it is (output features, input features) = "
                             "(2 * out_features, in_features)")
                elif name == "weight" and got == (out_f, in_f):
                    cause = ("one weight holds both halves: 2 * out_features rows, the first out_features make a, "
                             "the rest make the gate g")
                elif name == "bias" and got == (out_f,):
                    cause = "the bias covers both halves: 2 * out_features entries"
                else:
                    cause = None
                fail_mismatch(f"{label}.{name} has the wrong shape", given=f"in_features={in_f}, out_features={out_f}",
                              expected=f"shape {shape}", got=f"shape {got}", cause=cause)
            if not facts["requires_grad"]:
                fail(f"{label}.{name} has requires_grad=False: it is frozen, so training would never change it "
                     "(leave nn.Parameter's default requires_grad=True)")
        extra = [n for n in names if n not in ("weight", "bias")]
        if extra:
            fail(f"{label} has parameters {names}; GLU has exactly two, `weight` and `bias` (likely cause: an extra "
                 "nn.Parameter or a submodule with parameters; keep only weight and bias)")
        _expect_glu(seen, f"{i}.fwd", label, inputs[i], in_f, out_f,
                    "forward gives the wrong output (the registered weight and bias must be what forward computes "
                    "with)", device)


@observing
def _state_dict_scenario(live: Live, device: torch.device, new_state: dict[str, torch.Tensor], x: torch.Tensor) -> None:
    label = "GLU(4, 3)"
    module = live.build("GLU", (4, 3))
    live.run(f"{label}.to({device.type!r})", module.to, device)
    state = live.run(f"{label}.state_dict()", module.state_dict)
    live.seen["keys"] = live.run(f"{label}.state_dict().keys()", lambda: [str(k) for k in state.keys()])
    live.seen["buffers"] = [n for n, _ in module.named_buffers()]
    live.run(f"{label}.load_state_dict(...)", module.load_state_dict, new_state)
    for name in ("weight", "bias"):
        value = live.run(f"reading {label}.{name}", getattr, module, name, None)
        live.seen[f"after.{name}"] = snap(value) if isinstance(value, torch.Tensor) else None
        live.seen[f"after.{name}_attr"] = _attribute_text(module, name)
    _record_forward(live, module, "loaded", label, x)


@GLU_EXERCISE.check(points=1)
def state_dict_keys(student: Submission, device: torch.device) -> None:
    """state_dict() has exactly the keys weight and bias; load_state_dict fills the Parameters forward uses."""
    new_weight, new_bias = torch.randn(6, 4, device=device), torch.randn(6, device=device)
    x = torch.randn(5, 4, device=device)
    seen = observe(student, _state_dict_scenario, device, {"weight": new_weight, "bias": new_bias}, x,
                   hint=_glu_error_hint)
    keys = seen["keys"]
    if sorted(keys) != ["bias", "weight"]:
        buffers = seen["buffers"]
        extra = [k for k in keys if k not in ("weight", "bias")]
        missing = [k for k in ("weight", "bias") if k not in keys]
        if any("." in k for k in extra):
            cause = ("the weights live in a submodule (an nn.Linear inside?): its keys are prefixed with its name; "
                     "make weight and bias GLU's own nn.Parameters")
        elif any(k in buffers for k in extra):
            cause = "extra tensors were registered as buffers: only weight and bias are state"
        elif missing:
            cause = (f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not registered: a plain tensor "
                     "attribute is not saved; wrap it in nn.Parameter")
        else:
            cause = None
        fail_mismatch("GLU(4, 3).state_dict() has the wrong keys", given="GLU(4, 3)",
                      expected="['weight', 'bias']", got=repr(keys), cause=cause)
    for name, new in [("weight", new_weight), ("bias", new_bias)]:
        value = seen[f"after.{name}"]
        if not isinstance(value, torch.Tensor):
            fail(f"after GLU(4, 3).load_state_dict(...), GLU.{name} is {seen[f'after.{name}_attr']}; it must be the "
                 "nn.Parameter that state_dict() saves and load_state_dict() fills")
        if not close(value, new, rtol=0, atol=0):
            fail(f"after GLU(4, 3).load_state_dict(...), GLU.{name} does not hold the loaded values\n"
                 f"  expected: {show(new)}\n  returned: {show(value)}\n"
                 f"  likely cause: `{name}` in state_dict() is not the tensor that GLU.{name} is")
    _expect_glu(seen, "loaded", "GLU(4, 3)", x, 4, 3,
                "after load_state_dict, forward does not compute with the loaded weight and bias", device,
                weight=new_weight, bias_value=new_bias)


def _init_cause(values: torch.Tensor, in_f: int, out_f: int, what: str) -> str | None:
    """Name a known initialisation from the spread of ``values``."""
    v = values.detach().cpu().double().reshape(-1)
    top, std = v.abs().max().item(), v.std().item()
    if top == 0:
        return (f"the {what} is all zeros; nn.Linear draws it uniform in [-1/sqrt(in_features), 1/sqrt(in_features)]"
                + (" (a zero bias is a different initialisation)" if what == "bias" else ""))
    if v.numel() > 1 and std == 0:
        return (f"every value is {show_number(v[0].item())}: a constant initialisation; nn.Linear draws each value "
                "uniform in [-1/sqrt(in_features), 1/sqrt(in_features)]")
    if v.min().item() >= 0:
        return "every value is >= 0: torch.rand is uniform in [0, 1); shift and scale it to [-bound, bound]"
    if 0.8 < std < 1.25 and top > 2:
        return "std is about 1: torch.randn is a standard normal; nn.Linear uses uniform(-1/sqrt(in_features), +)"
    # A uniform(-b, b) sample of n values has its largest |value| within b * 5/n of b and its std within about
    # 5 * 0.45 / sqrt(n) (relative) of b/sqrt(3): tight enough at the sizes drawn to tell these bounds apart.
    n = v.numel()
    std_band = max(2.25 / math.sqrt(n), 0.02)
    known = [
        (1 / math.sqrt(2 * out_f), "the bound uses the weight's row count 2 * out_features as fan_in; fan_in is "
                                   "in_features (weight.shape[1]): bound = 1/sqrt(in_features)"),
        (1 / math.sqrt(out_f), "the bound uses out_features; fan_in is in_features: bound = 1/sqrt(in_features)"),
        (math.sqrt(6 / in_f), "kaiming_uniform_ with its default a=0 gives bound sqrt(6/fan_in); nn.Linear uses "
                              "kaiming_uniform_(weight, a=math.sqrt(5)), i.e. bound 1/sqrt(in_features)"),
        (math.sqrt(6 / (in_f + 2 * out_f)), "xavier_uniform_ (bound sqrt(6/(fan_in + fan_out))) is not nn.Linear's "
                                            "initialisation: bound = 1/sqrt(in_features)"),
        (math.sqrt(3 / in_f), "kaiming_uniform_ with a=1 (bound sqrt(3/fan_in)); nn.Linear uses a=math.sqrt(5)"),
        (1.0, "uniform in [-1, 1]; nn.Linear scales the bound to 1/sqrt(in_features)"),
        (1 / in_f, "the bound is 1/in_features; nn.Linear's is 1/sqrt(in_features) (the square root is missing)"),
    ]
    for bound, cause in known:
        if bound * (1 - 5 / n - 1e-6) <= top <= bound * (1 + 1e-5) and \
                abs(std - bound / math.sqrt(3)) < std_band * bound / math.sqrt(3):
            return cause
    bound = 1 / math.sqrt(in_f)
    if abs(std - bound) < 0.2 * bound and top > 2.5 * std:  # a uniform's largest |value| is sqrt(3) * std
        return ("a normal distribution with std 1/sqrt(in_features) (torch.randn(...) / sqrt(in_features)?); "
                "nn.Linear draws uniform in [-1/sqrt(in_features), 1/sqrt(in_features)], whose std is "
                "1/sqrt(3 * in_features) and which never goes past the bound")
    return None


def _build_counting_resets(live: Live, args: tuple) -> tuple[nn.Module, int | None]:
    """Construct GLU(*args); when the student's class defines its own reset_parameters, count its calls
    (the method is wrapped only while the constructor runs, then put back). None: no such method."""
    cls = live.student.get("GLU")
    owner = next((klass for klass in getattr(cls, "__mro__", ()) if "reset_parameters" in vars(klass)), None)
    original = vars(owner)["reset_parameters"] if owner is not None else None
    if owner is None or not inspect.isfunction(original) or original.__module__.startswith("torch."):
        return live.build("GLU", args), None
    calls = [0]

    def counting(self, *a, **k):
        calls[0] += 1
        return original(self, *a, **k)

    try:
        setattr(owner, "reset_parameters", counting)
        module = live.build("GLU", args)
    finally:
        setattr(owner, "reset_parameters", original)
    return module, calls[0]


@observing
def _init_scenario(live: Live, cases: list[tuple[int, int]], x: torch.Tensor) -> None:
    module = None
    for i, (in_f, out_f) in enumerate(cases):
        module, resets = _build_counting_resets(live, (in_f, out_f))
        live.seen[f"{i}.resets"] = resets
        _record_parameters(live, module, str(i), call_text("GLU", (in_f, out_f)), in_f, usable=False)
    in_f, out_f = cases[-1]
    label = call_text("GLU", (in_f, out_f))
    _record_parameters(live, module, "fwd", label, in_f)
    _record_forward(live, module, "fwd", label, x)


@GLU_EXERCISE.check(points=1)
def init_like_linear(student: Submission, device: torch.device) -> None:
    """weight and bias start uniform in +-1/sqrt(in_features), like nn.Linear (and forward uses them)."""
    # Sizes with in_features != 2 * out_features, so fan_in mixed up with the row count shows. The
    # statistics below hold for any uniform(-bound, bound) draw by a wide margin (6 sigma or more).
    cases = [(100, 30), (9, 40)]
    # On the CPU, where the modules are built: moving to a device is to_device_and_double's check, and with x
    # on a GPU every answer, the reference too, failed here (seen on an H100).
    x = torch.randn(3, 9)
    seen = observe(student, _init_scenario, cases, x, hint=_glu_error_hint)
    for i, (in_f, out_f) in enumerate(cases):
        label = f"GLU({in_f}, {out_f})"
        bound = 1 / math.sqrt(in_f)
        weight, bias = _glu_parameters(seen, str(i), label, in_f, out_f)
        for name, values, std_band, mean_band in [("weight", weight, 0.15, 0.15), ("bias", bias, 0.4, 0.5)]:
            v = values.cpu().double().reshape(-1)
            problems = []
            if not torch.isfinite(v).all():
                problems.append("some values are not finite (an uninitialised torch.empty?)")
            else:
                top, std, mean = v.abs().max().item(), v.std().item(), v.mean().item()
                uniform_std = bound / math.sqrt(3)
                if top > bound * (1 + 1e-5):
                    problems.append(f"largest |value| {show_number(top)} is above the bound 1/sqrt(in_features) = "
                                    f"{show_number(bound)}")
                elif abs(std - uniform_std) > std_band * uniform_std:
                    problems.append(f"std {std:.4g} differs from {uniform_std:.4g}, a uniform(-bound, bound)'s std "
                                    f"bound/sqrt(3)")
                elif abs(mean) > mean_band * bound:
                    problems.append(f"mean {mean:.4g} is far from 0")
            if problems:
                cause = None if not torch.isfinite(v).all() else _init_cause(v, in_f, out_f, name)
                if seen[f"{i}.resets"] == 0:  # the class defines reset_parameters(); constructing never called it
                    cause = ("your class defines reset_parameters(), but GLU(...) never calls it, so the values are "
                             "whatever the tensor was created with (torch.empty: whatever memory holds): call "
                             "self.reset_parameters() at the end of __init__")
                fail_mismatch(f"{label}.{name} is not initialised like nn.Linear",
                              given=f"{label}: {v.numel()} values, bound 1/sqrt({in_f}) = {show_number(bound)}",
                              expected=f"uniform in [-{show_number(bound)}, {show_number(bound)}] "
                                       f"(std {show_number(bound / math.sqrt(3))})",
                              got=f"{problems[0]}; values {show(v, 6)}", cause=cause)
    in_f, out_f = cases[-1]
    _expect_glu(seen, "fwd", f"GLU({in_f}, {out_f})", x, in_f, out_f,
                "forward gives the wrong output (the initial weight and bias only matter through forward)", x.device)


def _noncontiguous_2d(in_f: int, device: torch.device) -> list[torch.Tensor]:
    """Valid 2-D inputs that are not contiguous: transposed, every other column, expanded, offset rows."""
    return [torch.randn(in_f, 6, device=device).t(), torch.randn(4, 2 * in_f, device=device)[:, ::2],
            torch.randn(1, in_f, device=device).expand(5, in_f),
            torch.randn(9, in_f + 3, device=device)[2:7, 1:in_f + 1]]


@GLU_EXERCISE.check(points=1)
def forward_matches_glu(student: Submission, device: torch.device) -> None:
    """2-D inputs (sizes 1 to 300, contiguous or not) give F.glu(x @ weight.T + bias, dim=-1)."""
    cases = [((5, 3), [torch.randn(6, 5, device=device)]),
             ((3, 4), [torch.randn(2, 3, device=device) * 2]),
             ((1, 1), [torch.randn(4, 1, device=device)]),
             ((300, 129), [torch.randn(3, 300, device=device)]),
             ((5, 3), _noncontiguous_2d(5, device))]
    seen = observe(student, _forward_cases, [(args, {}, inputs) for args, inputs in cases], device,
                   hint=_glu_error_hint)
    for i, ((in_f, out_f), inputs) in enumerate(cases):
        label = f"GLU({in_f}, {out_f})"
        weight, bias = _glu_parameters(seen, str(i), label, in_f, out_f)
        for j, x in enumerate(inputs):
            layout = "" if x.is_contiguous() else " that is not contiguous (a valid input all the same)"
            _expect_glu(seen, f"{i}.{j}", label, x, in_f, out_f,
                        f"forward gives the wrong output for a 2-D input{layout}", device, weight=weight,
                        bias_value=bias)


def _leading_dims_inputs(in_f: int, device: torch.device) -> list[torch.Tensor]:
    inputs = [torch.randn(4, 6, in_f), torch.randn(2, 2, 4, in_f), torch.randn(in_f), torch.randn(2, 3, 2, 2, in_f),
              torch.randn(in_f, 6, 4).permute(2, 1, 0),  # (4, 6, in), no dim contiguous
              torch.randn(3, 4, 2 * in_f)[..., ::2],  # every other feature
              torch.randn(1, 1, in_f).expand(3, 4, in_f),  # stride 0 in the leading dims
              torch.randn(2 * in_f + 1)[1::2],  # 1-D with stride 2 and a storage offset
              torch.randn(0, in_f), torch.randn(2, 0, in_f)]  # size-0 leading dims
    return [x.to(device) for x in inputs]


def _lead_text(x: torch.Tensor) -> str:
    n = x.dim() - 1
    layout = "" if x.is_contiguous() else ", not contiguous"
    return f"{n} leading dim{'s' if n != 1 else ''} {tuple(x.shape[:-1])}{layout}"


@GLU_EXERCISE.check(points=1)
def any_leading_dims(student: Submission, device: torch.device) -> None:
    """Inputs (in,), (A, in), (A, B, in) ... up to 4 leading dims, size 0 and non-contiguous, give (..., out)."""
    inputs = _leading_dims_inputs(5, device)
    seen = observe(student, _forward_cases, [((5, 3), {}, inputs)], device, hint=_glu_error_hint)
    weight, bias = _glu_parameters(seen, "0", "GLU(5, 3)", 5, 3)
    for j, x in enumerate(inputs):
        _expect_glu(seen, f"0.{j}", "GLU(5, 3)", x, 5, 3, f"wrong output for an input with {_lead_text(x)}", device,
                    weight=weight, bias_value=bias)


@observing
def _no_bias_scenario(live: Live, device: torch.device, keyword_inputs: list[torch.Tensor],
                      positional_input: torch.Tensor) -> None:
    for key, args, kwargs, inputs in [("kw", (5, 3), {"bias": False}, keyword_inputs),
                                      ("pos", (5, 3, False), {}, [positional_input])]:
        label = call_text("GLU", args, kwargs)
        module = live.build("GLU", args, kwargs)
        live.run(f"{label}.to({device.type!r})", module.to, device)
        live.seen[f"{key}.has_bias"] = live.run(f"reading {label}.bias", hasattr, module, "bias")
        value = live.run(f"reading {label}.bias", getattr, module, "bias", None)
        live.seen[f"{key}.bias_text"] = "None" if value is None else _attribute_text(module, "bias")
        live.seen[f"{key}.bias_is_none"] = value is None
        live.seen[f"{key}.keys"] = live.run(f"{label}.state_dict()", lambda: [str(k) for k in module.state_dict()])
        _record_parameters(live, module, key, label, 5)
        for j, x in enumerate(inputs):
            _record_forward(live, module, f"{key}.{j}", label, x)


@GLU_EXERCISE.check(points=1)
def no_bias(student: Submission, device: torch.device) -> None:
    """GLU(..., bias=False), by keyword or position: bias None, no bias parameter or key, F.glu(x @ weight.T)."""
    keyword_inputs = [torch.randn(4, 5, device=device), torch.randn(2, 3, 5, device=device)]
    positional_input = torch.randn(3, 5, device=device)
    seen = observe(student, _no_bias_scenario, device, keyword_inputs, positional_input, hint=_glu_error_hint)
    for key, label, inputs in [("kw", "GLU(5, 3, bias=False)", keyword_inputs),
                               ("pos", "GLU(5, 3, False)", [positional_input])]:
        if not seen[f"{key}.has_bias"]:
            fail(f"{label} has no attribute `bias`; with bias=False it must still exist and be None, as "
                 "nn.Linear(bias=False) does (likely cause: self.register_parameter('bias', None) is missing)")
        if not seen[f"{key}.bias_is_none"]:
            fail(f"{label}.bias is {seen[f'{key}.bias_text']}; with bias=False it must be None, with no bias parameter "
                 "and no 'bias' key in state_dict()\n  likely cause: the bias argument is ignored, or replaced by "
                 "zeros; register None instead: self.register_parameter('bias', None)")
        names, keys = seen[f"{key}.names"], seen[f"{key}.keys"]
        if "bias" in names or "bias" in keys or sorted(keys) != ["weight"]:
            fail(f"{label}: named_parameters() gives {names} and state_dict() has the keys {keys}; with bias=False "
                 "the only parameter and the only key is `weight`")
        weight, _ = _glu_parameters(seen, key, label, 5, 3, bias=False)
        for j, x in enumerate(inputs):
            _expect_glu(seen, f"{key}.{j}", label, x, 5, 3, "wrong output without a bias", device, bias=False,
                        weight=weight, bias_value=None, stray_bias=seen.get(f"{key}.bias"))


@GLU_EXERCISE.check(points=1)
def to_device_and_double(student: Submission, device: torch.device) -> None:
    """After .to(device).double() the parameters and output are float64 on the device and match F.glu."""
    inputs = {True: torch.randn(3, 2, 5, dtype=torch.float64, device=device),
              False: torch.randn(4, 5, dtype=torch.float64, device=device)}
    cases = [((5, 3), {} if with_bias else {"bias": False}, [x]) for with_bias, x in inputs.items()]
    seen = observe(student, _forward_cases, cases, device, True, hint=_glu_error_hint)
    for i, (with_bias, x) in enumerate(inputs.items()):
        label = "GLU(5, 3)" if with_bias else "GLU(5, 3, bias=False)"
        names = ["weight", "bias"] if with_bias else ["weight"]
        for name in names:
            value = _own_parameter(seen, str(i), name, label)
            if value.dtype != torch.float64 or value.device.type != device.type:
                fail(f"after {label}.to({device.type!r}).double(), {label}.{name} is "
                     f"{dtype_name(value.dtype)} on {value.device.type}; expected float64 on {device.type}\n"
                     "  likely cause: a plain tensor attribute, which .to() and .double() do not convert; make it "
                     "an nn.Parameter")
        weight, bias = _glu_parameters(seen, str(i), label, 5, 3, bias=with_bias)
        _expect_glu(seen, f"{i}.0", label, x, 5, 3, f"wrong output after {label}.to({device.type!r}).double()",
                    device, rtol=_GLU64_RTOL, atol=_GLU64_ATOL, weight=weight, bias_value=bias,
                    stray_bias=None if with_bias else seen.get(f"{i}.bias"))


@observing
def _gradient_scenario(live: Live, cases: list[tuple[tuple, dict, torch.Tensor, torch.Tensor]],
                       device: torch.device) -> None:
    for i, (args, kwargs, x, upstream) in enumerate(cases):
        label = call_text("GLU", args, kwargs)
        module = live.build("GLU", args, kwargs)
        live.run(f"{label}.to({device.type!r})", module.to, device)
        weight, bias = _record_parameters(live, module, str(i), label, args[0])
        x = x.requires_grad_(True)
        out = _record_forward(live, module, str(i), label, x)
        if not (isinstance(out, torch.Tensor) and out.requires_grad and out.shape == upstream.shape):
            return  # the judge says what is wrong with the output
        loss = (out * upstream.to(dtype=out.dtype)).sum()
        live.run(f"loss.backward() through {label}", loss.backward)
        for name, value in (("weight", weight), ("bias", bias)):
            live.seen[f"{i}.{name}.grad"] = snap(value.grad) if isinstance(value, torch.Tensor) else None
        live.seen[f"{i}.x.grad"] = snap(x.grad)


@GLU_EXERCISE.check(points=1)
def gradients_reach_parameters(student: Submission, device: torch.device) -> None:
    """backward() through the output fills weight.grad, bias.grad and x.grad with F.glu's gradients."""
    cases = [((5, 3), {}, torch.randn(4, 5, device=device), torch.randn(4, 3, device=device)),
             ((5, 3), {"bias": False}, torch.randn(2, 3, 5, device=device), torch.randn(2, 3, 3, device=device))]
    seen = observe(student, _gradient_scenario, cases, device, hint=_glu_error_hint)
    for i, (args, kwargs, x0, upstream) in enumerate(cases):
        label = _case_label(args, kwargs)
        with_bias = not kwargs
        weight, bias = _glu_parameters(seen, str(i), label, 5, 3, bias=with_bias)
        # Expected gradients: PyTorch's autograd through F.glu on independent float64 leaf copies.
        leaves = [t.detach().cpu().double().requires_grad_(True) if t is not None else None for t in (x0, weight, bias)]
        (F.glu(F.linear(*leaves), dim=-1) * upstream.cpu().double()).sum().backward()
        expected = {"x": leaves[0].grad, "weight": leaves[1].grad, "bias": leaves[2].grad if with_bias else None}
        given = f"x = {describe_tensor(x0)} with requires_grad=True"
        got = seen[f"{i}.out"]
        if not isinstance(got, torch.Tensor):
            fail(f"{label}(x) for {given} returned {show(got)}, a {type_name(got)}; forward must return a tensor")
        if tuple(got.shape) != tuple(upstream.shape):
            fail(f"{label}(x) for {given} returned shape {tuple(got.shape)}, expected {tuple(upstream.shape)} "
                 "(see forward_matches_glu)")
        if not seen[f"{i}.out_facts"]["requires_grad"]:
            fail(f"{label}(x) for {given} has no autograd history (grad_fn is None), so no gradient can reach weight "
                 "or bias\n  likely cause: forward runs under torch.no_grad(), or uses .data / .detach() / "
                 "torch.tensor(...) copies of the parameters or the output")
        grads = {"weight": seen[f"{i}.weight.grad"], "bias": seen[f"{i}.bias.grad"], "x": seen[f"{i}.x.grad"]}
        for name in ("weight", "bias") if with_bias else ("weight",):
            if grads[name] is None:
                fail(f"after loss.backward(), {label}.{name}.grad is None: no gradient reached the Parameter\n"
                     f"  likely cause: forward computes with a detached copy of it (self.{name}.data, .detach(), "
                     f".clone().detach(), torch.tensor(self.{name})) or with another tensor, not with self.{name}")
        if grads["x"] is None:
            fail("after loss.backward(), x.grad is None: the output does not depend on x through autograd "
                 "(likely cause: x.detach() or x.data in forward)")
        forward_ok = close(got, _glu_reference(x0, weight, bias), rtol=_GLU_RTOL, atol=_GLU_ATOL)
        for name in ("weight", "bias", "x") if with_bias else ("weight", "x"):
            if not close(grads[name], expected[name], rtol=_GLU_RTOL, atol=_GLU_ATOL):
                fail_mismatch(f"wrong gradient in {name}.grad", given=f"loss = ({label}(x) * r).sum(), x and r of "
                              f"shapes {tuple(x0.shape)} and {tuple(upstream.shape)}", expected=show(expected[name]),
                              got=show(grads[name]),
                              where=difference(grads[name], expected[name], rtol=_GLU_RTOL, atol=_GLU_ATOL)
                              if isinstance(grads[name], torch.Tensor) else None,
                              cause=None if forward_ok else "the forward output itself is wrong (see "
                                                            f"{'forward_matches_glu' if with_bias else 'no_bias'})")


# ==================================================================================================
# Generated cases (issue 32): GLU's whole domain, drawn per check, observed in the runner, judged here
# ==================================================================================================
# What the spec allows, sentence by sentence: any in_features and out_features (equal, in = 2 * out, out above
# in, 1, larger), bias given or not, by keyword or position (all arguments by keyword too), "any number of
# leading dims" (none to 4, sizes 0 and 1 among them), any layout of the input (transposed, strided, expanded,
# offset storage, permuted), values from tiny to saturating, "after .to(device) and .double()" (float32 and
# float64), in training or eval mode, with and without autograd, several modules alive at once (their calls
# interleaved), and for gradients: upstream gradients of any values and a .grad already there (it accumulates).
from graders import domain  # noqa: E402

GEN_LAYOUTS = ("contiguous", "transposed", "every_other", "expanded", "offset", "permuted")
GEN_VALUES = ("normal", "small", "large", "zeros", "saturating")
GEN_SCALE = {"normal": 1.0, "small": 1e-3, "large": 1e3, "zeros": 0.0, "saturating": 30.0}
GEN_FORMS = ("default", "bias_kw_true", "bias_kw_false", "bias_pos_true", "bias_pos_false", "keywords",
             "keywords_false")
GEN_RELATIONS = ("free", "equal", "in_twice_out", "out_above_in", "ones", "wide")


@dataclasses.dataclass(frozen=True)
class GluInput:
    """One input: its leading dims, layout, values, autograd state (plain, requires_grad, under no_grad)."""
    lead: tuple[int, ...]
    layout: str
    values: str
    grad: str
    seed: int


@dataclasses.dataclass(frozen=True)
class GluCase:
    """One module, how it is built and converted, and the inputs it is given."""
    in_f: int
    out_f: int
    form: str
    double: bool
    eval_mode: bool
    inputs: tuple[GluInput, ...]

    @property
    def bias(self) -> bool:
        return not self.form.endswith("false")

    @property
    def args(self) -> tuple:
        if self.form.startswith("keywords"):
            return ()
        if self.form.startswith("bias_pos"):
            return (self.in_f, self.out_f, self.bias)
        return (self.in_f, self.out_f)

    @property
    def kwargs(self) -> dict[str, Any]:
        if self.form == "keywords":
            return {"in_features": self.in_f, "out_features": self.out_f}
        if self.form == "keywords_false":
            return {"in_features": self.in_f, "out_features": self.out_f, "bias": False}
        if self.form.startswith("bias_kw"):
            return {"bias": self.bias}
        return {}

    @property
    def built(self) -> str:
        return call_text("GLU", self.args, self.kwargs)

    @property
    def label(self) -> str:
        return self.built + (".double()" if self.double else "") + (".eval()" if self.eval_mode else "")

    @property
    def dtype(self) -> torch.dtype:
        return torch.float64 if self.double else torch.float32


def glu_sizes(generator: Any) -> tuple[int, int]:
    """(in_features, out_features), the relations between them no fixed case has included."""
    relation = domain.pick(generator, GEN_RELATIONS, [5, 1, 1, 1, 1, 1])
    if relation == "equal":
        n = domain.small_int(generator, 1, 12)
        return n, n
    if relation == "in_twice_out":
        o = domain.small_int(generator, 1, 6)
        return 2 * o, o
    if relation == "out_above_in":
        i = domain.small_int(generator, 1, 5)
        return i, i + generator.randint(1, 8)
    if relation == "ones":
        return domain.pick(generator, [(1, 1), (1, generator.randint(2, 9)), (generator.randint(2, 9), 1)])
    if relation == "wide":
        return generator.randint(30, 130), generator.randint(17, 70)
    return domain.small_int(generator, 1, 9), domain.small_int(generator, 1, 8)


def glu_input(generator: Any, in_f: int, *, wide: bool = False, grads: Sequence[str] = ("plain", "requires_grad",
              "no_grad"), values: Sequence[str] = GEN_VALUES) -> GluInput:
    ndim = domain.pick(generator, [0, 1, 2, 3, 4], [2, 4, 3, 2, 1])
    lead = tuple(domain.small_int(generator, 0, 2 if wide else 4, edge=0.15) for _ in range(ndim))
    layout = domain.pick(generator, GEN_LAYOUTS, [4, 2, 2, 1, 2, 1])
    if layout in ("transposed", "expanded") and ndim == 0 or layout == "permuted" and ndim < 2:
        layout = "offset"
    value = domain.pick(generator, values, [5, 1, 1, 1, 1][:len(values)])
    return GluInput(lead, layout, value, domain.pick(generator, grads), generator.getrandbits(31))


def glu_case(generator: Any, *, inputs: int = 3, grads: Sequence[str] = ("plain", "requires_grad", "no_grad"),
             values: Sequence[str] = GEN_VALUES) -> GluCase:
    in_f, out_f = glu_sizes(generator)
    wide = in_f * out_f > 400
    count = generator.randint(1, inputs)
    return GluCase(in_f, out_f, domain.pick(generator, GEN_FORMS, [3, 1, 2, 1, 1, 1, 1]),
                   generator.random() < 0.4, generator.random() < 0.3,
                   tuple(glu_input(generator, in_f, wide=wide, grads=grads, values=values) for _ in range(count)))


def glu_input_tensor(spec: GluInput, in_f: int, dtype: torch.dtype) -> torch.Tensor:
    """The input ``spec`` describes, on the CPU: values drawn from its seed, then laid out as it says."""
    g = torch.Generator().manual_seed(spec.seed)
    shape = (*spec.lead, in_f)

    def base(*size: int) -> torch.Tensor:
        t = torch.randn(*size, generator=g, dtype=dtype)
        return t.mul_(GEN_SCALE[spec.values])

    if spec.layout == "transposed":
        return base(*shape[:-2], shape[-1], shape[-2]).transpose(-1, -2)
    if spec.layout == "every_other":
        return base(*shape[:-1], 2 * in_f)[..., ::2]
    if spec.layout == "expanded":
        return base(1, *shape[1:]).expand(shape)
    if spec.layout == "offset":
        return base(math.prod(shape) + 3)[3:].view(shape)
    if spec.layout == "permuted":
        return base(*reversed(shape)).permute(*reversed(range(len(shape))))
    return base(*shape)


def _gen_size(pair: tuple[GluCase, GluInput]) -> tuple:
    case, spec = pair
    return (math.prod(spec.lead) * case.in_f, case.in_f + case.out_f, len(spec.lead), spec.layout != "contiguous",
            spec.values != "normal", spec.grad != "plain", case.form != "default", case.double, case.eval_mode)


def _gen_call(case: GluCase, spec: GluInput, x: torch.Tensor) -> str:
    grad = {"plain": "", "requires_grad": ", x.requires_grad_(True)", "no_grad": ", under torch.no_grad()"}[spec.grad]
    values = {"normal": "torch.randn", "small": "torch.randn * 1e-3", "large": "torch.randn * 1e3",
              "zeros": "zeros", "saturating": "torch.randn * 30"}[spec.values]
    return f"m = {case.label}; m(x) with x = {describe_tensor(x)} ({values} values{grad})"


@observing
def _generated_scenario(live: Live, cases: list[GluCase], inputs: list[list[torch.Tensor]],
                        order: list[tuple[int, int]], device: torch.device,
                        backward: dict[tuple[int, int], dict[str, Any]] | None = None, first: int = 0) -> None:
    """Build every case's module first (all alive at once), record its parameters, then call the inputs in
    ``order`` (interleaving the modules). Each call's output, or what it raised, is recorded on its own. With
    ``backward``: for each call, preset the parameters' .grad, run (out * r).sum().backward(), record the grads."""
    modules = []
    for i, case in enumerate(cases):
        module = live.build("GLU", case.args, case.kwargs)
        live.run(f"{case.built}.to({device.type!r})", module.to, device)
        if case.double:
            live.run(f"{case.built}.double()", module.double)
        if case.eval_mode:
            live.run(f"{case.built}.eval()", module.eval)
        modules.append((module, *_record_parameters(live, module, str(first + i), case.built, case.in_f)))
    for i, j in order:
        module, weight, bias = modules[i]
        spec, x, key = cases[i].inputs[j], inputs[i][j], f"{first + i}.{j}"
        try:
            if spec.grad == "requires_grad" or backward is not None:
                x.requires_grad_(True)
            if spec.grad == "no_grad":
                with torch.no_grad():
                    out = live.student.run(module, x)
            else:
                out = live.student.run(module, x)
        except StudentRaised as exc:
            live.seen[f"{key}.error"] = dataclasses.asdict(exc.error)
            continue
        live.seen[f"{key}.out"] = snap(out)
        if backward is None:
            continue
        plan = backward[(first + i, j)]
        if not (isinstance(out, torch.Tensor) and out.requires_grad and out.shape == plan["r"].shape):
            continue  # the judge says what is wrong with the output
        for name, value in (("weight", weight), ("bias", bias)):
            if isinstance(value, torch.Tensor):
                preset = plan["preset"].get(name)
                value.grad = (preset.to(device=value.device, dtype=value.dtype)
                              if isinstance(preset, torch.Tensor) and preset.shape == value.shape else None)
        try:
            live.student.run((out * plan["r"].to(device=out.device, dtype=out.dtype)).sum().backward)
        except StudentRaised as exc:
            live.seen[f"{key}.error"] = dataclasses.asdict(exc.error)
            continue
        for name, value in (("weight", weight), ("bias", bias), ("x", x)):
            live.seen[f"{key}.{name}.grad"] = snap(value.grad) if isinstance(value, torch.Tensor) else None


@judge_only
def _gen_expected(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """F.glu(F.linear(x, weight, bias), dim=-1) in float64, and each element's tolerance for x's dtype: the
    rounding a float32 (or float64) dot product of these magnitudes may make, through a and through the gate."""
    x64, w64 = x.detach().cpu().double().contiguous(), weight.detach().cpu().double()
    b64 = bias.detach().cpu().double() if bias is not None else None
    with one_torch_thread():
        return _gen_expected_values(x64, w64, b64, x.dtype)


def _gen_expected_values(x64: torch.Tensor, w64: torch.Tensor, b64: torch.Tensor | None,
                         dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    h = F.linear(x64, w64, b64)
    size = F.linear(x64.abs(), w64.abs(), b64.abs() if b64 is not None else None)  # what rounding scales with
    half = w64.shape[0] // 2
    a, g = h[..., :half], h[..., half:]
    unit = torch.finfo(dtype).eps * 4 * (x64.shape[-1] + 4)
    tolerance = unit * (size[..., :half] + a.abs() * size[..., half:] / 4) + 1e-6 * (unit > 1e-10) + 1e-12
    out = F.glu(h, dim=-1)
    return out, tolerance + 1e-4 * (unit > 1e-10) * out.abs()


def _within(got: torch.Tensor, expected: torch.Tensor, tolerance: torch.Tensor) -> torch.Tensor:
    a, b = got.detach().cpu().double(), expected.detach().cpu().double()
    return ((a - b).abs() <= tolerance) | (a.isnan() & b.isnan()) | (a == b)


def _gen_problem(got: Any, expected: torch.Tensor, tolerance: torch.Tensor, dtype: torch.dtype,
                 device: torch.device) -> str | None:
    """What is wrong with one output (None: nothing)."""
    if not isinstance(got, torch.Tensor):
        return f"forward returned {show(got)}, a {type_name(got)}; it must return a tensor"
    if tuple(got.shape) != tuple(expected.shape):
        return f"shape {tuple(got.shape)} instead of {tuple(expected.shape)}"
    if got.device.type != device.type:
        return f"the output is on {got.device.type}, the input on {device.type}"
    if got.dtype != dtype:
        return f"dtype {dtype_name(got.dtype)} instead of {dtype_name(dtype)} (the input's)"
    bad = ~_within(got, expected, tolerance)
    if bool(bad.any()):
        error = torch.where(bad, (got.detach().cpu().double() - expected).abs().nan_to_num(nan=math.inf),
                            torch.zeros_like(expected))
        flat = int(error.reshape(-1).argmax())
        index = [int(i) for i in torch.unravel_index(torch.tensor(flat), expected.shape)]
        return (f"{int(bad.sum())} of {expected.numel()} elements differ; the largest difference is at index "
                f"{index}: expected {show_number(expected.reshape(-1)[flat].item())}, returned "
                f"{show_number(got.detach().cpu().double().reshape(-1)[flat].item())}")
    return None


RAISES = object()  # a mistake that would raise on this input


def _glu_mistakes() -> list[tuple[str, Callable[..., Any]]]:
    """(cause, what that mistake returns for (x64, w64, b64, out_f, stray_bias)) for the mistakes students
    make. None: the mistake changes nothing here (it returns the right answer); RAISES: it would raise."""

    def split(h: torch.Tensor, dim: int) -> Any:
        try:  # exactly what `a, g = h.chunk(2, dim=dim); a * sigmoid(g)` does, errors included
            a, g = h.chunk(2, dim=dim)
            return a * torch.sigmoid(g)
        except (RuntimeError, ValueError, IndexError):
            return RAISES

    def halves(x, w, b):
        h = F.linear(x, w, b)
        o = w.shape[0] // 2
        return h, h[..., :o], h[..., o:]

    def with_bias(fn):  # a bias mistake applies only where there is a bias
        return lambda x, w, b, o, s: fn(x, w, b, o) if b is not None else None

    return [
        ("the halves are swapped: a is the FIRST half of h (h[..., :out_features]) and the gate g, the one that "
         "goes through sigmoid, is the SECOND", lambda x, w, b, o, s: (lambda h, a, g: g * torch.sigmoid(a))(
             *halves(x, w, b))),
        ("h was split into every other feature (interleaved) instead of its first and second halves: use "
         "h.chunk(2, dim=-1)", lambda x, w, b, o, s: (lambda h: h[..., 0::2] * torch.sigmoid(h[..., 1::2]))(
             F.linear(x, w, b))),
        ("the gate uses tanh; GLU gates with sigmoid: a * sigmoid(g)",
         lambda x, w, b, o, s: (lambda h, a, g: a * torch.tanh(g))(*halves(x, w, b))),
        ("the gate uses softmax over the features; GLU gates each feature on its own with sigmoid",
         lambda x, w, b, o, s: (lambda h, a, g: a * torch.softmax(g, dim=-1))(*halves(x, w, b))),
        ("the gate g must go through sigmoid: the output is a * sigmoid(g), not a * g",
         lambda x, w, b, o, s: (lambda h, a, g: a * g)(*halves(x, w, b))),
        ("sigmoid was applied to the product; the output is a * sigmoid(g)",
         lambda x, w, b, o, s: (lambda h, a, g: torch.sigmoid(a * g))(*halves(x, w, b))),
        ("sigmoid was applied to both halves; only the gate g goes through sigmoid",
         lambda x, w, b, o, s: (lambda h, a, g: torch.sigmoid(a) * torch.sigmoid(g))(*halves(x, w, b))),
        ("the output is silu of the whole h (h * sigmoid(h)); GLU multiplies the first half by sigmoid of the second",
         lambda x, w, b, o, s: (lambda h: h * torch.sigmoid(h))(F.linear(x, w, b))),
        ("the bias was not added: h = x @ weight.T + bias",
         with_bias(lambda x, w, b, o: F.glu(F.linear(x, w), dim=-1))),
        ("the bias was added to the first half a only; it is added to all 2 * out_features entries",
         with_bias(lambda x, w, b, o: (lambda h: h[..., :o] * torch.sigmoid(h[..., o:] - b[o:]))(F.linear(x, w, b)))),
        ("the bias was added to the gate g only; it is added to all 2 * out_features entries",
         with_bias(lambda x, w, b, o: (lambda h: (h[..., :o] - b[:o]) * torch.sigmoid(h[..., o:]))(
             F.linear(x, w, b)))),
        ("the bias was added twice: F.linear(x, weight, bias) (or nn.Linear) already adds it",
         with_bias(lambda x, w, b, o: F.glu(F.linear(x, w, b) + b, dim=-1))),
        ("the module was built with bias=False, yet it adds a bias: with bias=False there is no bias at all",
         lambda x, w, b, o, s: (F.glu(F.linear(x, w, s), dim=-1) if b is None and isinstance(s, torch.Tensor)
                                and s.shape == (w.shape[0],) else None)),
        ("the output has 2 * out_features features: h was returned whole (or a and g concatenated)",
         lambda x, w, b, o, s: F.linear(x, w, b)),
        ("h was split along dim 0, a batch dim, instead of the LAST dim: h.chunk(2, dim=-1)",
         lambda x, w, b, o, s: split(F.linear(x, w, b), 0) if x.dim() > 1 else None),
        ("h was split along dim 1, which is the last dim only for 2-D inputs: split with h.chunk(2, dim=-1)",
         lambda x, w, b, o, s: split(F.linear(x, w, b), 1) if x.dim() > 2 else RAISES if x.dim() < 2 else None),
        ("a 1-D input (in_features,) must give a 1-D output (out_features,): a batch dim added with unsqueeze(0) "
         "(or reshape(1, -1)) was never removed",
         lambda x, w, b, o, s: F.glu(F.linear(x, w, b), dim=-1).unsqueeze(0) if x.dim() == 1 else None),
        ("the leading dims were flattened and not restored: reshape the output back to x.shape[:-1] + "
         "(out_features,)",
         lambda x, w, b, o, s: F.glu(F.linear(x, w, b), dim=-1).reshape(-1, o) if x.dim() != 2 else None),
        ("x @ weight (not weight.T): weight has shape (2 * out_features, in_features), so h = x @ weight.T + bias",
         lambda x, w, b, o, s: F.glu(F.linear(x, w.t(), b), dim=-1) if w.shape[0] == w.shape[1] else RAISES),
    ]


@judge_only
def _gen_cause(observed: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, Any, Any, torch.Tensor,
                                    bool]]) -> str | None:
    """The one catalogued mistake that gives the student's output on every case that returned one, and
    differs from the right answer on at least one of them; None when no mistake or more than one does."""
    fitting = []
    for cause, mistake in _glu_mistakes():
        explains = False
        for x, w, b, stray, got, tolerance, failed in observed:
            x64 = x.detach().cpu().double()
            try:
                wrong = mistake(x64, w.detach().cpu().double(), b.detach().cpu().double() if b is not None else None,
                                w.shape[0] // 2, stray.detach().cpu().double() if isinstance(stray, torch.Tensor)
                                else None)
            except RuntimeError:
                wrong = RAISES
            if wrong is RAISES:
                break
            if wrong is None:
                if failed:
                    break
                continue
            if not isinstance(got, torch.Tensor) or got.shape != wrong.shape or got.dtype != x.dtype:
                break
            if wrong.shape == tolerance.shape:
                fits = bool(_within(got, wrong, tolerance).all())
            else:
                fits = close(got, wrong, rtol=1e-4, atol=1e-5)
            if not fits:
                break
            explains = explains or failed
        else:
            if explains:
                fitting.append(cause)
    return fitting[0] if len(fitting) == 1 else None


def _gen_draw(student: Submission, device: torch.device, count: int, *, backward: bool) -> tuple:
    """Draw ``count`` cases (modules), build their inputs, run them in one scenario; (cases, inputs, seen)."""
    if backward:
        cases = domain.draw(lambda g: glu_case(g, grads=("plain",), values=("normal", "small", "zeros")), count,
                            size=lambda c: (c.in_f * c.out_f, len(c.inputs)))
    else:
        cases = domain.draw(glu_case, count, size=lambda c: (c.in_f * c.out_f, len(c.inputs)))
    order_rng = domain.rng()
    inputs = [[glu_input_tensor(spec, case.in_f, case.dtype).to(device) for spec in case.inputs] for case in cases]

    def order(first: int, stop: int) -> list[tuple[int, int]]:
        pairs = [(i, j) for i in range(stop - first) for j in range(len(cases[first + i].inputs))]
        order_rng.shuffle(pairs)  # the modules' calls interleaved: one module's state must not reach another
        return pairs

    plan = None
    if backward:
        plan = {}
        for i, case in enumerate(cases):
            for j, spec in enumerate(case.inputs):
                g = torch.Generator().manual_seed(spec.seed + 1)
                preset = {}
                if order_rng.random() < 0.5:  # a .grad already there: backward adds to it
                    preset["weight"] = torch.randn(2 * case.out_f, case.in_f, generator=g, dtype=case.dtype)
                    preset["bias"] = torch.randn(2 * case.out_f, generator=g, dtype=case.dtype)
                r = torch.randn(*spec.lead, case.out_f, generator=g, dtype=case.dtype)
                plan[(i, j)] = {"r": r.to(device), "preset": {k: v.to(device) for k, v in preset.items()}}
    seen = observe_chunks(student, _generated_scenario, len(cases), lambda a, b: (
        cases[a:b], inputs[a:b], order(a, b), device, plan, a), hint=_glu_error_hint)
    return cases, inputs, seen, plan


def _gen_raise(seen: Seen, key: str, call: str) -> None:
    error = StudentError(**seen.data[f"{key}.error"])
    cause = _glu_error_hint(error, call) if error.kind == "raised" else None
    if cause:
        fail(f"{call} failed: {error.describe()}\n  likely cause: {cause}")
    raise StudentCodeError(error, call)


CHUNK = 40  # modules per scenario call: a call stays far below the 3 s after which a runner is lowered to nice 19


def observe_chunks(student: Submission, scenario: Callable[..., Any], count: int,
                   arguments: Callable[[int, int], tuple], *, hint: Hint | None = None, chunk: int = CHUNK) -> Seen:
    """``scenario(*arguments(first, stop))`` for each chunk [first, stop) of ``count`` items (a scaled-up draw
    makes several calls, each of the graded size), the observations merged (the first error is kept)."""
    data: dict[str, Any] = {}
    for first in range(0, count, chunk):
        seen = student.scenario(scenario, *arguments(first, min(count, first + chunk)))
        for key, value in seen.items():
            if key in ("error", "error_at"):
                data.setdefault(key, value)
            else:
                data[key] = value
        if "error" in seen:
            break
    return Seen(data, hint)


def _one_thread(check: Callable[..., None]) -> Callable[..., None]:
    """Run a check's judging with one torch thread: its tensors are tiny, and on a loaded machine a second
    thread makes each small float64 product 10-100x slower."""

    @functools.wraps(check)
    def run(student: Submission, device: torch.device) -> None:
        with one_torch_thread():
            check(student, device)

    return run


def _judge_outputs(cases: list[GluCase], inputs: list[list[torch.Tensor]], seen: Seen, device: torch.device,
                   what: str) -> None:
    """Every recorded output against F.glu on its module's own parameters; on a failure, the smallest failing
    case, and a cause when exactly one catalogued mistake gives every output that came back."""
    pairs, observed, failing = [], [], []
    for i, case in enumerate(cases):
        weight, bias = _glu_parameters(seen, str(i), case.label, case.in_f, case.out_f, bias=case.bias)
        for j, spec in enumerate(case.inputs):
            x, key = inputs[i][j], f"{i}.{j}"
            pair = (case, spec)
            pairs.append(pair)
            if f"{key}.error" in seen:
                failing.append((pair, key, None))
                continue
            got = seen[f"{key}.out"]
            expected, tolerance = _gen_expected(x, weight, bias)
            problem = _gen_problem(got, expected, tolerance, x.dtype, device)
            if problem:
                failing.append((pair, key, problem))
            observed.append((x, weight, bias, seen.get(f"{i}.bias"), got, tolerance, problem is not None))
    if not failing:
        return
    (case, spec), key, problem = min(failing, key=lambda f: _gen_size(f[0]))
    i, j = cases.index(case), case.inputs.index(spec)
    x = inputs[i][j]
    call = _gen_call(case, spec, x)
    if problem is None:
        _gen_raise(seen, key, call)
    weight, bias = _glu_parameters(seen, str(i), case.label, case.in_f, case.out_f, bias=case.bias)
    expected, _ = _gen_expected(x, weight, bias)
    fail_mismatch(f"{what}: forward differs from F.glu(x @ weight.T + bias, dim=-1) on {len(failing)} of "
                  f"{len(pairs)} generated cases; the smallest is shown", given=call,
                  expected=show(expected.to(x.dtype)), got=show(seen[f"{key}.out"]), where=problem,
                  cause=_gen_cause(observed))


@GLU_EXERCISE.check(points=1)
@_one_thread
def generated_forward(student: Submission, device: torch.device) -> None:
    """Generated cases over the whole domain (sizes and their relations, bias forms, up to 4 leading dims of
    any size and layout, tiny to saturating values, float32/float64, eval mode, no_grad, several modules at
    once): every output is F.glu(x @ weight.T + bias, dim=-1) on the module's own parameters."""
    cases, inputs, seen, _ = _gen_draw(student, device, 40, backward=False)
    _judge_outputs(cases, inputs, seen, device, "generated modules and inputs")


@GLU_EXERCISE.check(points=1)
@_one_thread
def generated_gradients(student: Submission, device: torch.device) -> None:
    """Generated cases (as generated_forward, with x.requires_grad): after (out * r).sum().backward(), weight.grad,
    bias.grad and x.grad are F.glu's gradients, added to a .grad that was already there."""
    cases, inputs, seen, plan = _gen_draw(student, device, 18, backward=True)
    failing = []
    total = 0
    for i, case in enumerate(cases):
        weight, bias = _glu_parameters(seen, str(i), case.label, case.in_f, case.out_f, bias=case.bias)
        for j, spec in enumerate(case.inputs):
            total += 1
            x, key, step = inputs[i][j], f"{i}.{j}", plan[(i, j)]
            if f"{key}.error" in seen:
                failing.append(((case, spec), key, None))
                continue
            got = seen[f"{key}.out"]
            expected, tolerance = _gen_expected(x, weight, bias)
            problem = _gen_problem(got, expected, tolerance, x.dtype, device)
            if problem:
                failing.append(((case, spec), key, f"the output itself is wrong ({problem}; see generated_forward)"))
                continue
            if f"{key}.x.grad" not in seen:
                failing.append(((case, spec), key, "the output has no autograd history (grad_fn is None), so no "
                                                   "gradient reaches weight, bias or x"))
                continue
            wrong = _gen_grad_problem(seen, key, x, weight, bias, step, case)
            if wrong:
                failing.append(((case, spec), key, wrong))
    if not failing:
        return
    (case, spec), key, problem = min(failing, key=lambda f: _gen_size(f[0]))
    x = inputs[cases.index(case)][case.inputs.index(spec)]
    call = _gen_call(case, spec, x) + "; (m(x) * r).sum().backward()"
    if plan[(cases.index(case), case.inputs.index(spec))]["preset"]:
        call += " with weight.grad and bias.grad already set"
    if problem is None:
        _gen_raise(seen, key, call)
    fail(f"wrong gradients on {len(failing)} of {total} generated cases; the smallest:\n  input:    {call}\n"
         f"  problem:  {problem}")


@judge_only
def _gen_grad_problem(seen: Seen, key: str, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                      step: dict[str, Any], case: GluCase) -> str | None:
    leaves = [t.detach().cpu().double().contiguous().requires_grad_(True) if t is not None else None
              for t in (x, weight, bias)]
    r = step["r"].cpu().double()
    with one_torch_thread():
        (F.glu(F.linear(*leaves), dim=-1) * r).sum().backward()
    _, tolerance = _gen_expected(x, weight, bias)
    scale = float(tolerance.max()) if tolerance.numel() else 1e-12
    for name, leaf in (("weight", leaves[1]), ("bias", leaves[2]), ("x", leaves[0])):
        if leaf is None:
            continue
        want = leaf.grad
        preset = step["preset"].get(name)
        if preset is not None:
            want = want + preset.cpu().double()
        got = seen[f"{key}.{name}.grad"]
        if got is None:
            return (f"{name}.grad is None after backward: no gradient reached it (forward computes with a detached "
                    f"copy: .data, .detach(), torch.tensor(...), or runs under torch.no_grad())")
        if tuple(got.shape) != tuple(want.shape):
            return f"{name}.grad has shape {tuple(got.shape)}, expected {tuple(want.shape)}"
        # A gradient sums as many products as the output has elements: its rounding grows with them.
        tol = 1e-4 if case.dtype == torch.float32 else 1e-9
        atol = tol * (1 + scale * 1e4) * max(1, r.numel() // max(1, case.out_f)) ** 0.5
        if not close(got, want, rtol=tol, atol=atol):
            return f"{name}.grad differs from F.glu's: " + difference(got, want, rtol=tol, atol=atol)
    return None


@observing
def _init_many_scenario(live: Live, cases: list[GluCase], inputs: list[list[torch.Tensor]], first: int = 0) -> None:
    """Build every module and record its initial parameters; then (on usable copies of them, see _make_usable)
    its output for its input: the initial values only matter through forward."""
    modules = []
    for i, case in enumerate(cases):
        module = live.build("GLU", case.args, case.kwargs)
        _record_parameters(live, module, f"init.{first + i}", case.built, case.in_f, usable=False)
        modules.append(module)
    for i, (case, module) in enumerate(zip(cases, modules)):
        _record_parameters(live, module, str(first + i), case.built, case.in_f)
        live.seen[f"{first + i}.0.out"] = snap(live.run(f"{case.built}(x)", module, inputs[i][0]))


_INIT_BOUNDS: list[tuple[str, Callable[[int, int], float]]] = [
    ("the bound uses the weight's row count 2 * out_features as fan_in; fan_in is in_features (weight.shape[1]): "
     "bound = 1/sqrt(in_features)", lambda i, o: 1 / math.sqrt(2 * o)),
    ("the bound uses out_features; fan_in is in_features: bound = 1/sqrt(in_features)", lambda i, o: 1 / math.sqrt(o)),
    ("kaiming_uniform_ with its default a=0 gives bound sqrt(6/fan_in); nn.Linear uses kaiming_uniform_(weight, "
     "a=math.sqrt(5)), i.e. bound 1/sqrt(in_features)", lambda i, o: math.sqrt(6 / i)),
    ("xavier_uniform_ (bound sqrt(6/(fan_in + fan_out))) is not nn.Linear's initialisation: bound = "
     "1/sqrt(in_features)", lambda i, o: math.sqrt(6 / (i + 2 * o))),
    ("kaiming_uniform_ with a=1 (bound sqrt(3/fan_in)); nn.Linear uses a=math.sqrt(5)", lambda i, o: math.sqrt(3 / i)),
    ("uniform in [-1, 1]; nn.Linear scales the bound to 1/sqrt(in_features)", lambda i, o: 1.0),
    ("the bound is 1/in_features; nn.Linear's is 1/sqrt(in_features) (the square root is missing)",
     lambda i, o: 1 / i),
]


@judge_only
def _uniform_problem(values: list[tuple[GluCase, torch.Tensor]], bound: Callable[[int, int], float]) -> str | None:
    """Why these tensors (one per module) are not, together, draws uniform in ±bound(in, out) (None: they may be).

    Every value must lie within its bound; scaled by it, the pooled values' mean, mean square and largest |value|
    must be those of uniform(-1, 1) draws: 0 (within 6 standard errors), 1/3 (within 6), and above 1 - 25/N
    (a correct draw misses these with probability below 1e-8)."""
    scaled = []
    for case, v in sorted(values, key=lambda cv: cv[1].numel()):
        b = bound(case.in_f, case.out_f)
        v = v.detach().cpu().double().reshape(-1)
        if not bool(torch.isfinite(v).all()):
            return f"{case.built} holds values that are not finite (an uninitialised torch.empty?)"
        if v.numel() and float(v.abs().max()) > b * (1 + 1e-6):
            return (f"{case.built} has a value {show_number(float(v.abs().max()))} in absolute value, above the bound "
                    f"{show_number(b)}")
        scaled.append(v / b)
    u = torch.cat(scaled) if scaled else torch.zeros(0, dtype=torch.float64)
    n = u.numel()
    if n < 50:
        return None
    mean, square, top = float(u.mean()), float((u * u).mean()), float(u.abs().max())
    if abs(mean) > 6 * math.sqrt(1 / (3 * n)):
        return f"the {n} values, divided by their bound, have mean {mean:.4g}; uniform(-1, 1) draws have mean 0"
    if abs(square - 1 / 3) > 6 * math.sqrt(4 / (45 * n)):
        return (f"the {n} values, divided by their bound, have mean square {square:.4g}; uniform(-1, 1) draws have "
                f"1/3 (std bound/sqrt(3))")
    if top < 1 - 25 / n:
        return (f"the {n} values, divided by their bound, reach at most {top:.4g} in absolute value; {n} uniform(-1, 1) "
                f"draws reach beyond {1 - 25 / n:.4g}: the range is narrower than ±1/sqrt(in_features)")
    return None


@GLU_EXERCISE.check(points=1)
@_one_thread
def generated_init(student: Submission, device: torch.device) -> None:
    """Generated sizes (1 to 130 in_features, 1 to 70 out_features, every bias form): every weight and bias value
    lies within ±1/sqrt(in_features), and together they are uniform over that range, as nn.Linear draws them."""
    cases = [dataclasses.replace(c, double=False, eval_mode=False, inputs=tuple(
        dataclasses.replace(spec, grad="plain") for spec in c.inputs))
        for c in domain.draw(lambda g: glu_case(g, inputs=1), 40, size=lambda c: c.in_f * c.out_f)]
    inputs = [[glu_input_tensor(case.inputs[0], case.in_f, torch.float32)] for case in cases]
    seen = observe_chunks(student, _init_many_scenario, len(cases), lambda a, b: (cases[a:b], inputs[a:b], a),
                          hint=_glu_error_hint)
    pools: dict[str, list[tuple[GluCase, torch.Tensor]]] = {"weight": [], "bias": []}
    for i, case in enumerate(cases):
        weight, bias = _glu_parameters(seen, f"init.{i}", case.built, case.in_f, case.out_f, bias=case.bias)
        pools["weight"].append((case, weight))
        if bias is not None:
            pools["bias"].append((case, bias))
    nn_linear = lambda i, o: 1 / math.sqrt(i)  # noqa: E731
    for name, pool in pools.items():
        problem = _uniform_problem(pool, nn_linear)
        if problem:
            fitting = [cause for cause, bound in _INIT_BOUNDS if _uniform_problem(pool, bound) is None]
            fail_mismatch(f"the {name} tensors of {len(pool)} generated GLU modules are not initialised like nn.Linear",
                          given=", ".join(c.built for c, _ in pool[:6]) + (", …" if len(pool) > 6 else ""),
                          expected=f"each {name} uniform in ±1/sqrt(in_features)", got=problem,
                          cause=fitting[0] if len(fitting) == 1 else None)
    # On the CPU, where the modules were built (moving them is to_device_and_double's and generated_forward's).
    _judge_outputs(cases, inputs, seen, torch.device("cpu"), "the initial parameters")
