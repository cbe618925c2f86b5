"""Chapter 03 (modules): checks for glu (``GLU``) and running_norm (``RunningNorm``).

Every expected value comes from PyTorch itself: ``torch.nn.functional.glu`` applied to
``F.linear(x, weight, bias)`` with the module's *own* parameters (read before its forward runs), and
``nn.BatchNorm1d(affine=False)`` run on independent copies of the same batches before the student's
module sees them. Known mistakes are named by comparing what the student returned with what a known
wrong computation gives on the same input.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from graders.core import (
    CheckFailed,
    StudentCodeError,
    Submission,
    dtype_name,
    exercise,
    fail,
    mismatch,
    one_torch_thread,
)
from graders.watch import torch_calls


# ==================================================================================================
# Shared helpers
# ==================================================================================================
def _tensor_text(t: torch.Tensor) -> str:
    return f"a {dtype_name(t.dtype)} tensor of shape {tuple(t.shape)} on {t.device.type}"


def _values(t: torch.Tensor, limit: int = 6) -> str:
    """The first few values of ``t`` (flattened), short enough for a failure message."""
    flat = t.detach().reshape(-1).cpu()
    if flat.is_floating_point():
        shown = ", ".join(f"{v:.6g}" for v in flat[:limit].tolist())
    else:
        shown = ", ".join(str(v) for v in flat[:limit].tolist())
    more = f", ... ({flat.numel()} values)" if flat.numel() > limit else ""
    return f"[{shown}{more}]"


def _close(got: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> bool:
    """Same shape and all values within tolerance (NaN never matches); compared on the cpu in float64."""
    if tuple(got.shape) != tuple(expected.shape):
        return False
    a = got.detach().cpu().double()
    b = expected.detach().cpu().double()
    return bool(torch.allclose(a, b, rtol=rtol, atol=atol))


def _named_cause(got: torch.Tensor, candidates, rtol: float, atol: float, right: torch.Tensor) -> str | None:
    """The cause of the first known-wrong result that ``got`` equals (and the right answer does not)."""
    for wrong, cause in candidates:
        try:
            wrong = wrong() if callable(wrong) else wrong
        except RuntimeError:  # that wrong computation is impossible for this input
            continue
        if _close(got, wrong, rtol, atol) and not _close(right, wrong, rtol, atol):
            return cause
    return None


def _make(student: Submission, name: str, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> nn.Module:
    """Construct the student's module (no copies: it is built here and owned by the check)."""
    kwargs = kwargs or {}
    shown = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
    label = f"{name}({shown})"
    try:
        module = student.run(student.get(name), *args, _label=label, **kwargs)
    except StudentCodeError as exc:
        if "before Module.__init__() call" in str(exc):
            fail(f"{exc}\n  likely cause: call super().__init__() first in __init__, before any "
                 "Parameter, buffer or submodule is assigned")
        raise
    if not isinstance(module, nn.Module):
        fail(f"{label} made an object of type {type(module).__name__}, which is not an nn.Module; {name} must be a "
             f"class that subclasses nn.Module (class {name}(nn.Module): ...)")
    return module


def _module_call(student: Submission, module: nn.Module, method: str, *args: Any) -> None:
    """Call ``module.to`` / ``.double`` / ``.train`` / ``.eval`` / ``.load_state_dict`` as student code."""
    student.run(getattr(module, method), *args, _label=f"{type(module).__name__}.{method}")


def _forward(student: Submission, module: nn.Module, x: torch.Tensor, label: str,
             hint: Callable[[str], str | None] | None = None) -> torch.Tensor:
    """Run the module on ``x`` (the check's own tensor, not copied) and insist on a tensor back."""
    try:
        got = student.run(module, x, _label=f"{label}.forward")
    except StudentCodeError as exc:
        cause = hint(str(exc)) if hint else None
        if cause:
            fail(f"{exc}\n  input: {_tensor_text(x)}\n  likely cause: {cause}")
        raise
    if not isinstance(got, torch.Tensor):
        fail(f"{label}(x) returned a {type(got).__name__} for x = {_tensor_text(x)}; forward must return a tensor")
    return got


def _expect_tensor(what: str, given: str, got: torch.Tensor, expected: torch.Tensor, *, rtol: float, atol: float,
                   shape_cause: str | None = None, value_cause: Callable[[], str | None] | None = None) -> None:
    """Shape, device, dtype and values of ``got`` against ``expected`` (which lives on the cpu)."""
    if tuple(got.shape) != tuple(expected.shape):
        raise mismatch(what, given=given, expected=f"shape {tuple(expected.shape)}", got=f"shape {tuple(got.shape)}",
                       cause=shape_cause)
    if got.dtype != expected.dtype:
        raise mismatch(what, given=given, expected=f"dtype {dtype_name(expected.dtype)}",
                       got=f"dtype {dtype_name(got.dtype)}",
                       cause="something in forward does not follow the input's dtype: a tensor created with the "
                             "default dtype (torch.zeros(n), torch.tensor(...)), an explicit .float(), or a "
                             "Parameter/buffer that .double() did not convert because it is a plain attribute")
    if not _close(got, expected, rtol, atol):
        raise mismatch(what, given=given, expected=_values(expected), got=_values(got),
                       cause=value_cause() if value_cause else None)


def _on(t: torch.Tensor, device: torch.device) -> bool:
    return t.device.type == device.type


def _fresh(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A new copy of ``t`` on ``device`` for student code (``.to`` alone returns ``t`` itself on the cpu)."""
    return t.detach().clone().to(device)


# ==================================================================================================
# glu
# ==================================================================================================
GLU_EXERCISE = exercise("glu", chapter="03_modules", names=["GLU"])
_GLU_RTOL, _GLU_ATOL = 1e-4, 1e-5  # float32; a different but correct order of operations stays far inside
_GLU64_RTOL, _GLU64_ATOL = 1e-10, 1e-12


def _glu_reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """What the spec asks for, from PyTorch itself: F.glu(x @ weight.T + bias, dim=-1)."""
    return F.glu(F.linear(x, weight, bias), dim=-1)


def _own_parameter(module: nn.Module, name: str, label: str, *, nested_ok: bool = False) -> torch.Tensor:
    """The module's own Parameter ``name``.

    With ``nested_ok``, a module that keeps its only ``*.name`` Parameter in a submodule (an nn.Linear
    inside) gets that one: the checks of the forward pass then still grade the forward pass, while
    parameters_registered and state_dict_keys report the missing own Parameter.
    """
    value = getattr(module, name, None)
    if isinstance(value, torch.Tensor):
        return value
    own = dict(module.named_parameters())
    nested = [n for n in own if n.endswith("." + name)]
    if nested_ok and len(nested) == 1:
        return own[nested[0]]
    if nested:
        fail(f"{label} has no Parameter `{name}` of its own; its parameters are named {list(own)}\n"
             f"  likely cause: the weights live in a submodule (an nn.Linear inside, as `{nested[0]}`); the spec "
             f"asks for GLU's own nn.Parameter `{name}`, so that state_dict() has exactly `weight` and `bias`")
    fail(f"{label}.{name} is {'missing' if value is None and not hasattr(module, name) else repr(value)}; "
         f"it must be an nn.Parameter (its parameters are named {list(own) or 'nothing'})\n"
         f"  likely cause: the Parameter was given another name, or never assigned to self.{name}")
    return None


def _make_usable(value: torch.Tensor, in_f: int) -> None:
    """Refill, in place, a Parameter that holds non-finite or huge values (an uninitialised torch.empty).

    The forward checks compare the output with F.glu on the module's own parameters; with garbage
    values both sides overflow and NaN never equals NaN, so a right forward would fail for what is an
    initialisation mistake (which init_like_linear reports). Uniform values like nn.Linear's let the
    forward checks grade the forward pass.
    """
    if not value.is_floating_point():
        return
    with torch.no_grad():
        if not bool(torch.isfinite(value).all()) or (value.numel() and value.abs().max().item() > 1e4):
            bound = 1 / math.sqrt(max(in_f, 1))
            value.uniform_(-bound, bound)


def _glu_parameters(module: nn.Module, label: str, in_f: int, out_f: int, *, bias: bool = True,
                    usable: bool = True):
    """Detached copies of the module's own weight and bias: what the expected value is computed from.

    With ``usable`` (the forward checks), parameters left uninitialised are first refilled in place.
    """
    weight = _own_parameter(module, "weight", label, nested_ok=True)
    b = _own_parameter(module, "bias", label, nested_ok=True) if bias else None
    for name, value, shape in [("weight", weight, (2 * out_f, in_f)), ("bias", b, (2 * out_f,))]:
        if value is not None and tuple(value.shape) != shape:
            fail(f"{label}.{name} has shape {tuple(value.shape)}, expected {shape} (see parameters_registered); "
                 "the output is compared with F.glu(F.linear(x, weight, bias)), which needs that shape")
        if value is not None and usable:
            _make_usable(value, in_f)
    return weight.detach().clone(), (b.detach().clone() if b is not None else None)


def _glu_shape_cause(x_shape: tuple[int, ...], out_features: int, got: tuple[int, ...]) -> str | None:
    lead = tuple(x_shape[:-1])
    if got == lead + (2 * out_features,):
        return ("the output has 2 * out_features features: h was returned whole (or a and g concatenated); the "
                "output is a * sigmoid(g), with out_features features")
    for d in range(len(lead)):
        if lead[d] % 2 == 0:
            halved = list(lead) + [2 * out_features]
            halved[d] //= 2
            if got == tuple(halved):
                return (f"h was split along dim {d}, a batch dim, instead of the LAST dim: split with "
                        "h.chunk(2, dim=-1), or h[..., :out_features] and h[..., out_features:]")
    if len(lead) != 1 and got == (math.prod(lead), out_features):
        return ("the leading dims were flattened and not restored: reshape the output back to "
                "x.shape[:-1] + (out_features,)")
    if len(lead) == 0 and len(got) == 1 and got[0] != out_features:
        return "a 1-D input (in_features,) has no batch dim: split the LAST dim (dim=-1), not dim 1"
    return None


def _glu_value_cause(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, got: torch.Tensor,
                     rtol: float = _GLU_RTOL, atol: float = _GLU_ATOL) -> str | None:
    x, weight = x.detach().cpu().double(), weight.detach().cpu().double()
    bias = bias.detach().cpu().double() if bias is not None else None
    h = F.linear(x, weight, bias)
    half = weight.shape[0] // 2
    a, g = h[..., :half], h[..., half:]
    right = a * torch.sigmoid(g)
    candidates = [
        (g * torch.sigmoid(a), "the halves are swapped: a is the FIRST half of h (h[..., :out_features]) and the "
                               "gate g, the one that goes through sigmoid, is the SECOND"),
        (lambda: h[..., 0::2] * torch.sigmoid(h[..., 1::2]),
         "h was split into every other feature (interleaved) instead of its first and second halves: use "
         "h.chunk(2, dim=-1)"),
        (a * torch.tanh(g), "the gate uses tanh; GLU gates with sigmoid: a * sigmoid(g)"),
        (a * g, "the gate g must go through sigmoid: the output is a * sigmoid(g), not a * g"),
        (torch.sigmoid(a * g), "sigmoid was applied to the product; the output is a * sigmoid(g)"),
        (lambda: F.glu(F.linear(x, weight), dim=-1), "the bias was not added: h = x @ weight.T + bias"),
        (torch.sigmoid(a) * torch.sigmoid(g), "sigmoid was applied to both halves; only the gate g goes through "
                                              "sigmoid: a * sigmoid(g)"),
    ]
    if bias is not None:
        h0 = F.linear(x, weight)
        a0, g0 = h0[..., :half], h0[..., half:]
        candidates += [
            ((a0 + bias[:half]) * torch.sigmoid(g0), "the bias was added to the first half a only; h = x @ weight.T "
                                                     "+ bias adds all 2 * out_features entries, to a and to g"),
            (a0 * torch.sigmoid(g0 + bias[half:]), "the bias was added to the gate g only; h = x @ weight.T + bias "
                                                   "adds all 2 * out_features entries, to a and to g"),
            (lambda: F.glu(h + bias, dim=-1), "the bias was added twice: F.linear(x, weight, bias) (or nn.Linear) "
                                              "already adds it"),
        ]
    return _named_cause(got, candidates, rtol, atol, right)


def _glu_error_hint(error: str) -> str | None:
    if "values to unpack" in error:
        return ("h must be split into exactly two halves along the last dim: h.chunk(2, dim=-1), or "
                "h.split(out_features, dim=-1) (h.split(2, dim=-1) makes pieces of size 2, not 2 pieces)")
    if "cannot be multiplied" in error or "size mismatch" in error or "must match the size" in error:
        return ("weight has shape (2 * out_features, in_features), like nn.Linear's: h = x @ weight.T + bias "
                "(or F.linear(x, weight, bias)); x.T reverses EVERY dim of an input with more than 2 dims, so "
                "transpose the weight, not x; also split h along the LAST dim")
    if "too many indices" in error or "out of range" in error:
        return ("index the feature dim from the end (h[..., :out_features], h.chunk(2, dim=-1)): with any number "
                "of leading dims, including none, the features are always the last dim")
    if "same dtype" in error or "expected scalar type" in error or "same device" in error \
            or "found at least two devices" in error:
        return ("a tensor that did not follow .to()/.double(): weight and bias must be nn.Parameters (a plain "
                "tensor attribute is left behind), and forward must not create tensors with the default dtype "
                "or device")
    return None


def _expect_glu(student: Submission, module: nn.Module, label: str, x: torch.Tensor, weight: torch.Tensor,
                bias: torch.Tensor | None, what: str, *, rtol: float = _GLU_RTOL,
                atol: float = _GLU_ATOL) -> torch.Tensor:
    """Compare the module's forward on ``x`` with F.glu on copies of its own parameters, computed first."""
    expected = _glu_reference(x.detach().clone(), weight, bias).cpu()
    given = f"x = {_tensor_text(x)}, {label} with its own weight and bias"
    got = _forward(student, module, x, label, _glu_error_hint)
    if not _on(got, x.device) and tuple(got.shape) == tuple(expected.shape):
        fail(f"{what}\n  input: {given}\n  the output is on {got.device.type}, x is on {x.device.type} (likely "
             "cause: a tensor created in forward without device=x.device, or a weight kept as a plain attribute)")
    _expect_tensor(what, given, got, expected, rtol=rtol, atol=atol,
                   shape_cause=_glu_shape_cause(tuple(x.shape), weight.shape[0] // 2, tuple(got.shape)),
                   value_cause=lambda: _glu_value_cause(x, weight, bias, got, rtol, max(atol, 1e-6)))
    return got


@GLU_EXERCISE.check(points=1)
def parameters_registered(student: Submission, device: torch.device) -> None:
    """weight (2*out, in) and bias (2*out,) are the module's own nn.Parameters."""
    for in_f, out_f in [(5, 3), (7, 2)]:
        label = f"GLU({in_f}, {out_f})"
        module = _make(student, "GLU", (in_f, out_f))
        registered = dict(module.named_parameters())
        for name, shape in [("weight", (2 * out_f, in_f)), ("bias", (2 * out_f,))]:
            value = _own_parameter(module, name, label)
            if not isinstance(value, nn.Parameter):
                fail(f"{label}.{name} is a plain {type(value).__name__}, not an nn.Parameter, so it is not "
                     "registered: not in parameters() (an optimiser never sees it), not in state_dict(), and "
                     f".to()/.double() leave it behind\n  likely cause: self.{name} = torch.empty(...) without "
                     f"wrapping it: self.{name} = nn.Parameter(torch.empty(...))")
            if registered.get(name) is not value:
                fail(f"{label}.{name} is an nn.Parameter but not registered under the name `{name}` "
                     f"(named_parameters() gives {list(registered)})")
            if tuple(value.shape) != shape:
                got = tuple(value.shape)
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
                raise mismatch(f"{label}.{name} has the wrong shape", given=f"in_features={in_f}, out_features={out_f}",
                               expected=f"shape {shape}", got=f"shape {got}", cause=cause)
            if not value.requires_grad:
                fail(f"{label}.{name} has requires_grad=False: it is frozen, so training would never change it "
                     "(leave nn.Parameter's default requires_grad=True)")


@GLU_EXERCISE.check(points=1)
def state_dict_keys(student: Submission, device: torch.device) -> None:
    """state_dict() has exactly the keys weight and bias, and load_state_dict fills the module's Parameters."""
    new_weight, new_bias = torch.randn(6, 4), torch.randn(6)
    module = _make(student, "GLU", (4, 3))
    _module_call(student, module, "to", device)
    keys = list(student.run(module.state_dict, _label="GLU.state_dict").keys())
    if sorted(keys) != ["bias", "weight"]:
        buffers = dict(module.named_buffers())
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
        raise mismatch("GLU(4, 3).state_dict() has the wrong keys", given="GLU(4, 3)",
                       expected="['weight', 'bias']", got=repr(keys), cause=cause)
    state = {"weight": new_weight.to(device), "bias": new_bias.to(device)}
    _module_call(student, module, "load_state_dict", state)
    for name, new in [("weight", new_weight), ("bias", new_bias)]:
        value = _own_parameter(module, name, "GLU(4, 3)")
        if not _close(value, new, 0, 0):
            fail(f"after GLU(4, 3).load_state_dict(...), GLU.{name} does not hold the loaded values\n"
                 f"  expected: {_values(new)}\n  returned: {_values(value)}\n"
                 f"  likely cause: `{name}` in state_dict() is not the tensor that GLU.{name} is")


def _init_cause(values: torch.Tensor, in_f: int, out_f: int, what: str) -> str | None:
    """Name a known initialisation from the spread of ``values``."""
    v = values.detach().cpu().double().reshape(-1)
    top, std = v.abs().max().item(), v.std().item()
    if top == 0:
        return (f"the {what} is all zeros; nn.Linear draws it uniform in [-1/sqrt(in_features), 1/sqrt(in_features)]"
                + (" (a zero bias is a different initialisation)" if what == "bias" else ""))
    if v.numel() > 1 and std == 0:
        return (f"every value is {v[0].item():.6g}: a constant initialisation; nn.Linear draws each value uniform "
                "in [-1/sqrt(in_features), 1/sqrt(in_features)]")
    if v.min().item() >= 0:
        return "every value is >= 0: torch.rand is uniform in [0, 1); shift and scale it to [-bound, bound]"
    if 0.8 < std < 1.25 and top > 2:
        return "std is about 1: torch.randn is a standard normal; nn.Linear uses uniform(-1/sqrt(in_features), +)"
    bound = 1 / math.sqrt(in_f)
    if abs(std - bound) < 0.2 * bound and top > 1.5 * bound:
        return ("a normal distribution with std 1/sqrt(in_features) (torch.randn(...) / sqrt(in_features)?); "
                "nn.Linear draws uniform in [-1/sqrt(in_features), 1/sqrt(in_features)], whose std is "
                "1/sqrt(3 * in_features) and which never goes past the bound")
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
        if abs(top - bound) < 0.1 * bound and abs(std - bound / math.sqrt(3)) < 0.2 * bound / math.sqrt(3):
            return cause
    return None


def _make_counting_resets(student: Submission, args: Sequence[Any], resets: list[int]) -> nn.Module:
    """Construct GLU(*args); when the student's class defines its own reset_parameters, count its calls.

    ``resets`` gets one number, the count, for a class with its own reset_parameters (not nn.Linear's);
    the method is wrapped only while the constructor runs, then put back.
    """
    cls = student.get("GLU")
    owner = next((klass for klass in getattr(cls, "__mro__", ()) if "reset_parameters" in vars(klass)), None)
    original = vars(owner)["reset_parameters"] if owner is not None else None
    if owner is None or not inspect.isfunction(original) or original.__module__.startswith("torch."):
        return _make(student, "GLU", args)
    calls = [0]

    def counting(self, *a, **k):
        calls[0] += 1
        return original(self, *a, **k)

    try:
        setattr(owner, "reset_parameters", counting)
        module = _make(student, "GLU", args)
    finally:
        setattr(owner, "reset_parameters", original)
    resets.append(calls[0])
    return module


@GLU_EXERCISE.check(points=1)
def init_like_linear(student: Submission, device: torch.device) -> None:
    """weight and bias start uniform in +-1/sqrt(in_features), like nn.Linear."""
    # Sizes with in_features != 2 * out_features, so fan_in mixed up with the row count shows. The
    # statistics below hold for any uniform(-bound, bound) draw by a wide margin (6 sigma or more).
    for in_f, out_f in [(100, 30), (9, 40)]:
        resets: list[int] = []
        module = _make_counting_resets(student, (in_f, out_f), resets)
        label = f"GLU({in_f}, {out_f})"
        bound = 1 / math.sqrt(in_f)
        weight, bias = _glu_parameters(module, label, in_f, out_f, usable=False)
        for name, values, std_band, mean_band in [("weight", weight, 0.15, 0.15), ("bias", bias, 0.4, 0.5)]:
            v = values.cpu().double().reshape(-1)
            top, std, mean = v.abs().max().item(), v.std().item(), v.mean().item()
            uniform_std = bound / math.sqrt(3)
            problems = []
            if not torch.isfinite(v).all():
                problems.append("some values are not finite (an uninitialised torch.empty?)")
            elif top > bound * (1 + 1e-5):
                problems.append(f"largest |value| {top:.4g} is above the bound 1/sqrt(in_features) = {bound:.4g}")
            elif abs(std - uniform_std) > std_band * uniform_std:
                problems.append(f"std {std:.4g} differs from {uniform_std:.4g}, a uniform(-bound, bound)'s std "
                                f"bound/sqrt(3)")
            elif abs(mean) > mean_band * bound:
                problems.append(f"mean {mean:.4g} is far from 0")
            if problems:
                cause = None if not torch.isfinite(v).all() else _init_cause(v, in_f, out_f, name)
                if resets == [0]:  # the class defines reset_parameters(), and constructing it never called it
                    cause = ("your class defines reset_parameters(), but GLU(...) never calls it, so the values are "
                             "whatever the tensor was created with (torch.empty: whatever memory holds): call "
                             "self.reset_parameters() at the end of __init__")
                raise mismatch(f"{label}.{name} is not initialised like nn.Linear",
                               given=f"{label}: {v.numel()} values, bound 1/sqrt({in_f}) = {bound:.4g}",
                               expected=f"uniform in [-{bound:.4g}, {bound:.4g}] (std {uniform_std:.4g})",
                               got=f"{problems[0]}; values {_values(v)}", cause=cause)


@GLU_EXERCISE.check(points=1)
def forward_matches_glu(student: Submission, device: torch.device) -> None:
    """For a 2-D input, forward equals F.glu(x @ weight.T + bias, dim=-1) on the module's own parameters."""
    inputs = {(5, 3): torch.randn(6, 5), (3, 4): torch.randn(2, 3) * 2}
    for (in_f, out_f), x in inputs.items():
        label = f"GLU({in_f}, {out_f})"
        module = _make(student, "GLU", (in_f, out_f))
        _module_call(student, module, "to", device)
        weight, bias = _glu_parameters(module, label, in_f, out_f)
        _expect_glu(student, module, label, _fresh(x, device), weight, bias, "forward gives the wrong output")


@GLU_EXERCISE.check(points=1)
def any_leading_dims(student: Submission, device: torch.device) -> None:
    """Inputs (in,), (A, B, in) and (A, B, C, in) give (..., out) matching F.glu."""
    inputs = [torch.randn(4, 6, 5), torch.randn(2, 2, 4, 5), torch.randn(5)]
    module = _make(student, "GLU", (5, 3))
    _module_call(student, module, "to", device)
    weight, bias = _glu_parameters(module, "GLU(5, 3)", 5, 3)
    for x in inputs:
        _expect_glu(student, module, "GLU(5, 3)", _fresh(x, device), weight, bias,
                    f"wrong output for an input with {x.dim() - 1} leading dim{'s' if x.dim() != 2 else ''}")


@GLU_EXERCISE.check(points=1)
def no_bias(student: Submission, device: torch.device) -> None:
    """GLU(..., bias=False) has bias None (no parameter, no state_dict key) and computes F.glu(x @ weight.T)."""
    x = torch.randn(4, 5)
    label = "GLU(5, 3, bias=False)"
    module = _make(student, "GLU", (5, 3), {"bias": False})
    _module_call(student, module, "to", device)
    value = getattr(module, "bias", None)
    if not hasattr(module, "bias"):
        fail(f"{label} has no attribute `bias`; with bias=False it must still exist and be None, as "
             "nn.Linear(bias=False) does (likely cause: self.register_parameter('bias', None) is missing)")
    if value is not None:
        shown = (f"a {type(value).__name__} of shape {tuple(value.shape)}" if isinstance(value, torch.Tensor)
                 else repr(value))
        fail(f"{label}.bias is {shown}; with bias=False it must be None, with no bias parameter and no 'bias' "
             "key in state_dict()\n  likely cause: the bias argument is ignored, or replaced by zeros; register "
             "None instead: self.register_parameter('bias', None)")
    names = [n for n, _ in module.named_parameters()]
    keys = list(module.state_dict().keys())
    if "bias" in names or "bias" in keys:
        fail(f"{label}: 'bias' is still in named_parameters() {names} / state_dict() {keys}; with bias=False "
             "there is no bias")
    weight, _ = _glu_parameters(module, label, 5, 3, bias=False)
    _expect_glu(student, module, label, _fresh(x, device), weight, None, "wrong output without a bias")


@GLU_EXERCISE.check(points=1)
def to_device_and_double(student: Submission, device: torch.device) -> None:
    """After .to(device).double() the parameters and output are float64 on the device and match F.glu."""
    inputs = {True: torch.randn(3, 2, 5, dtype=torch.float64), False: torch.randn(4, 5, dtype=torch.float64)}
    for with_bias, x in inputs.items():
        label = "GLU(5, 3)" if with_bias else "GLU(5, 3, bias=False)"
        module = _make(student, "GLU", (5, 3), {} if with_bias else {"bias": False})
        _module_call(student, module, "to", device)
        _module_call(student, module, "double")
        names = ["weight", "bias"] if with_bias else ["weight"]
        for name in names:
            value = _own_parameter(module, name, label, nested_ok=True)
            if value.dtype != torch.float64 or not _on(value, device):
                fail(f"after {label}.to({device.type!r}).double(), {label}.{name} is "
                     f"{dtype_name(value.dtype)} on {value.device.type}; expected float64 on {device.type}\n"
                     "  likely cause: a plain tensor attribute, which .to() and .double() do not convert; make it "
                     "an nn.Parameter")
        weight, bias = _glu_parameters(module, label, 5, 3, bias=with_bias)
        _expect_glu(student, module, label, _fresh(x, device), weight, bias,
                    f"wrong output after {label}.to({device.type!r}).double()", rtol=_GLU64_RTOL, atol=_GLU64_ATOL)


@GLU_EXERCISE.check(points=1)
def gradients_reach_parameters(student: Submission, device: torch.device) -> None:
    """backward() through the output fills weight.grad, bias.grad and x.grad with F.glu's gradients."""
    x0, upstream = torch.randn(4, 5), torch.randn(4, 3)
    label = "GLU(5, 3)"
    module = _make(student, "GLU", (5, 3))
    _module_call(student, module, "to", device)
    weight, bias = _glu_parameters(module, label, 5, 3)
    # Expected gradients: PyTorch's autograd through F.glu on independent leaf copies, computed first.
    leaves = [t.detach().clone().cpu().requires_grad_(True) for t in (x0, weight, bias)]
    (_glu_reference(*leaves) * upstream).sum().backward()
    expected = {"x": leaves[0].grad, "weight": leaves[1].grad, "bias": leaves[2].grad}

    x = _fresh(x0, device).requires_grad_(True)
    got = _forward(student, module, x, label, _glu_error_hint)
    if got.grad_fn is None:
        fail(f"{label}(x) for x = {_tensor_text(x)} with requires_grad=True has no autograd history (grad_fn is "
             "None), so no gradient can reach weight or bias\n  likely cause: forward runs under torch.no_grad(), "
             "or uses .data / .detach() / torch.tensor(...) copies of the parameters or the output")
    if tuple(got.shape) != (4, 3):
        fail(f"{label}(x) for x = {_tensor_text(x)} returned shape {tuple(got.shape)}, expected (4, 3)")
    student.run((got * upstream.to(device=device, dtype=got.dtype)).sum().backward, _label="backward through GLU")
    params = {name: _own_parameter(module, name, label, nested_ok=True) for name in ("weight", "bias")}
    for name, param in params.items():
        if param.grad is None:
            fail(f"after loss.backward(), {label}.{name}.grad is None: no gradient reached the Parameter\n"
                 f"  likely cause: forward computes with a detached copy of it (self.{name}.data, .detach(), "
                 f".clone().detach(), torch.tensor(self.{name})) or with another tensor, not with self.{name}")
    if x.grad is None:
        fail("after loss.backward(), x.grad is None: the output does not depend on x through autograd "
             "(likely cause: x.detach() or x.data in forward)")
    forward_ok = _close(got, _glu_reference(x0, weight.cpu(), bias.cpu()), _GLU_RTOL, _GLU_ATOL)
    for name, grad in [("weight", params["weight"].grad), ("bias", params["bias"].grad), ("x", x.grad)]:
        if not _close(grad, expected[name], _GLU_RTOL, _GLU_ATOL):
            raise mismatch(f"wrong gradient in {name}.grad", given=f"loss = ({label}(x) * r).sum(), x and r of "
                           "shapes (4, 5) and (4, 3)", expected=_values(expected[name]), got=_values(grad),
                           cause=None if forward_ok else "the forward output itself is wrong (see forward_matches_glu)")


# ==================================================================================================
# running_norm
# ==================================================================================================
RUNNING_NORM_EXERCISE = exercise("running_norm", chapter="03_modules", names=["RunningNorm"])
_BUFFERS = ("running_mean", "running_var", "num_batches_tracked")
_OUT_RTOL, _OUT_ATOL = 1e-6, 1e-9  # float64 throughout: every known mistake is off by 1% or far more
_BUF_RTOL, _BUF_ATOL = 1e-6, 1e-12  # running_var of a feature with std 1e-3 is about 1e-6


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
            y = bn(x.clone())
        steps.append({"x": x, "y": y.detach().clone(), "before": before, "after": _state(bn), "seen": seen})
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
        ((x - before["running_mean"]) / (before["running_var"] + eps).sqrt(),
         "training mode normalised with the running statistics; it must use the batch's own mean and biased "
         "variance (the running buffers are for eval mode)"),
        ((x - after["running_mean"]) / (after["running_var"] + eps).sqrt(),
         "training mode normalised with the running statistics (just updated); it must use the batch's own mean "
         "and biased variance (the running buffers are for eval mode)"),
        ((x - x.mean(1, keepdim=True)) / (x.var(1, unbiased=False, keepdim=True) + eps).sqrt(),
         "statistics taken over dim 1 (across features) instead of dim 0 (over the N samples of each feature)"),
        ((x - mean) / (var_b + 1e-5).sqrt(), "eps=1e-5 was used instead of the eps given to __init__ (hard-coded?)"),
    ]
    if momentum is not None and momentum != eps:
        candidates.append(((x - mean) / (var_b + momentum).sqrt(),
                           f"eps={momentum} (the momentum) was used as eps: the signature is RunningNorm(num_features, "
                           "momentum=0.1, eps=1e-5), in that order (nn.BatchNorm1d has eps first)"))
    return _named_cause(got, candidates, _OUT_RTOL, _OUT_ATOL, right)


def _norm_buffer_cause(name: str, step: dict[str, Any], got: torch.Tensor, momentum: float | None,
                       eps: float) -> str | None:
    x, before, right = step["x"], step["before"], step["after"][name]
    count = int(step["after"]["num_batches_tracked"])
    factor = _momentum_factor(momentum, count)
    got = got.detach().cpu().double()
    old = before[name]
    if name == "num_batches_tracked":
        if _close(got, before[name], 0, 0):
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
        if factor != 1.0:  # with factor 1 the reversed blend keeps the old value: see `stale` below
            candidates.append((_blend(new, old, factor),
                               "momentum is applied the wrong way round: running = (1 - factor) * running + factor * "
                               "batch_value, where for momentum=None factor = 1 / num_batches_tracked"))
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
            return (f"running_var got the biased variance times {k_mean:.6g}; the unbiased correction is N / (N - 1) "
                    f"= {n / (n - 1):.6g} with N = x.shape[0] = {n}, the batch size{hint}")
        candidates += [
            (_blend(old, var_b, factor),
             "running_var is updated with the BIASED batch variance; BatchNorm feeds the UNBIASED variance "
             "(divided by N - 1, i.e. var * N / (N - 1)) into running_var"),
            (_blend(old, new.sqrt(), factor), "running_var is updated with the standard deviation, not the variance"),
            (_blend(old, new + eps, factor), "eps was added to the variance stored in running_var; eps only goes "
                                             "into the normalisation's sqrt(var + eps)"),
        ]
    return _named_cause(got, candidates, _BUF_RTOL, _BUF_ATOL, right)


def _norm_error_hint(error: str) -> str | None:
    if "NoneType" in error or "ZeroDivisionError" in error or "division by zero" in error:
        return ("momentum=None is not handled: it means a cumulative average, factor = 1 / num_batches_tracked "
                "after incrementing num_batches_tracked")
    if "same dtype" in error or "expected scalar type" in error or "same device" in error \
            or "found at least two devices" in error:
        return ("a buffer that did not follow .to()/.double(): running_mean and running_var must be registered with "
                "self.register_buffer(...) (a plain tensor attribute is left behind), and forward must not create "
                "tensors with the default dtype or device")
    return None


def _buffer(module: nn.Module, name: str, label: str) -> torch.Tensor:
    value = getattr(module, name, None)
    if not isinstance(value, torch.Tensor):
        fail(f"{label}.{name} is {'missing' if value is None else repr(value)}; it must be a tensor registered "
             f"with self.register_buffer({name!r}, ...) (see buffers_registered)")
    return value


def _train_and_compare(student: Submission, module: nn.Module, label: str, device: torch.device,
                       steps: Sequence[dict[str, Any]], momentum: float | None, eps: float, what: str) -> None:
    """Feed each batch to the student's module in training mode; compare its output and buffers step by step."""
    for i, step in enumerate(steps):
        x = _fresh(step["x"], device)
        given = f"batch {i + 1} of {len(steps)} in training mode, x = {_tensor_text(x)}; {label}"
        got = _forward(student, module, x, label, _norm_error_hint)
        if tuple(got.shape) == tuple(step["y"].shape) and not _on(got, device):
            fail(f"{what}\n  input: {given}\n  the output is on {got.device.type}, x on {device.type}")
        _expect_tensor(f"{what}: wrong output", given, got, step["y"], rtol=_OUT_RTOL, atol=_OUT_ATOL,
                       value_cause=lambda: _norm_output_cause(step["x"], got, step["y"], eps, momentum,
                                                              step["before"], step["after"]))
        for name in _BUFFERS:
            value = _buffer(module, name, label)
            right = step["after"][name]
            if not _on(value, device):
                fail(f"{what}\n  input: {given}\n  after the batch, {name} is on {value.device.type}, not "
                     f"{device.type} (likely cause: it was replaced by a tensor created on the cpu)")
            if name != "num_batches_tracked" and value.dtype != torch.float64:
                fail(f"{what}\n  input: {given}\n  {name} is {dtype_name(value.dtype)} although the module was "
                     "converted with .double()\n  likely cause: it is not a registered buffer (.double() skipped "
                     "it), or it was replaced by a tensor created with the default dtype")
            if name != "num_batches_tracked" and value.numel() == right.numel() and \
                    tuple(value.shape) != tuple(right.shape):
                fail(f"{what}\n  input: {given}\n  after the batch, {name} has shape {tuple(value.shape)}; it must keep "
                     f"its shape {tuple(right.shape)}, as BatchNorm's (a state_dict() saved now no longer loads into "
                     f"a fresh module)\n  likely cause: the batch statistics were computed with keepdim=True (or "
                     "unsqueezed) and assigned to the buffer; keep the buffers 1-D and broadcast in the arithmetic")
            if value.numel() != right.numel() or not _close(value.reshape(right.shape), right, _BUF_RTOL, _BUF_ATOL):
                raise mismatch(f"{what}: wrong {name} after batch {i + 1}", given=given,
                               expected=f"{_values(right)}  (nn.BatchNorm1d(affine=False) on the same batches)",
                               got=_values(value),
                               cause=_norm_buffer_cause(name, step, value.reshape(right.shape), momentum, eps)
                               if value.numel() == right.numel() else None)


def _training_step_did_something(student: Submission, module: nn.Module, label: str, x: torch.Tensor,
                                  got: torch.Tensor, check: str) -> None:
    """Refuse a vacuous pass: a forward that returns the input's shape and moves running_mean."""
    if tuple(got.shape) != tuple(x.shape):
        fail(f"{label}(x) for x = {_tensor_text(x)} returned shape {tuple(got.shape)}; it must return the input's "
             f"shape, so {check} cannot be judged yet (see train_matches_batchnorm)")
    mean = _buffer(module, "running_mean", label)
    if bool((mean.detach() == 0).all()):
        fail(f"after a training batch, {label}.running_mean is still all zeros: the running statistics are not "
             f"updated, so there is nothing for {check} to judge yet (see train_matches_batchnorm)")


def _make_norm(student: Submission, device: torch.device, num_features: int, args: Sequence[Any] = (),
               kwargs: dict[str, Any] | None = None) -> tuple[nn.Module, str]:
    module = _make(student, "RunningNorm", (num_features, *args), kwargs)
    _module_call(student, module, "to", device)
    _module_call(student, module, "double")
    shown = ", ".join([str(num_features)] + [repr(a) for a in args] + [f"{k}={v!r}" for k, v in (kwargs or {}).items()])
    return module, f"RunningNorm({shown})"


@RUNNING_NORM_EXERCISE.check(points=1)
def buffers_registered(student: Submission, device: torch.device) -> None:
    """running_mean (zeros), running_var (ones), num_batches_tracked (int64 0): buffers in state_dict, no parameters."""
    module = _make(student, "RunningNorm", (5,))
    _module_call(student, module, "to", device)
    label = "RunningNorm(5)"
    buffers = dict(module.named_buffers())
    parameters = dict(module.named_parameters())
    keys = list(module.state_dict().keys())
    for name in _BUFFERS:
        value = getattr(module, name, None)
        nested = [n for n in list(buffers) + list(parameters) if n.endswith("." + name)]
        if name in parameters:
            fail(f"{label}.{name} is an nn.Parameter; running statistics are buffers: an optimiser would update a "
                 f"Parameter and it would take part in autograd\n  likely cause: nn.Parameter(...) where "
                 f"self.register_buffer({name!r}, ...) belongs")
        if value is None and nested:
            fail(f"{label} has no {name} of its own, only `{nested[0]}` in a submodule\n  likely cause: an "
                 "nn.BatchNorm1d inside; the exercise is to register the buffers and compute the statistics yourself")
        if not isinstance(value, torch.Tensor):
            fail(f"{label}.{name} is {'missing' if value is None else repr(value)}; it must be a tensor registered "
                 f"with self.register_buffer({name!r}, ...)")
        if name not in buffers or buffers[name] is not value:
            fail(f"{label}.{name} is a plain tensor attribute, not a registered buffer: it is not in state_dict(), "
                 f"so saving and loading lose it, and .to()/.double() leave it behind\n  likely cause: "
                 f"self.{name} = torch...(...) where self.register_buffer({name!r}, torch...(...)) belongs")
        if name not in keys:
            fail(f"{label}.{name} is not in state_dict() (keys: {keys})\n  likely cause: registered with "
                 "persistent=False; running statistics must be saved with the model")
        if not _on(value, device):
            fail(f"after {label}.to({device.type!r}), {name} is on {value.device.type}: it did not follow .to()")
    if parameters:
        fail(f"{label} has parameters {list(parameters)}; like nn.BatchNorm1d(affine=False) it has none (no "
             "learnable weight or bias): its state is buffers only")
    right = {"running_mean": torch.zeros(5), "running_var": torch.ones(5), "num_batches_tracked": torch.tensor(0)}
    for name, expected in right.items():
        value = getattr(module, name)
        if name == "num_batches_tracked":
            if value.dtype != torch.int64:
                fail(f"{label}.num_batches_tracked is {dtype_name(value.dtype)}; it must be int64, as BatchNorm's "
                     "(likely cause: torch.tensor(0.0) or torch.zeros(()); use torch.tensor(0, dtype=torch.long))")
            if value.numel() != 1 or value.item() != 0:
                fail(f"{label}.num_batches_tracked is {_values(value)}; it must start as a single 0")
            continue
        if not value.is_floating_point():
            fail(f"{label}.{name} is {dtype_name(value.dtype)}; it must be a floating tensor like the input "
                 "(likely cause: built from ints, e.g. torch.zeros(n, dtype=torch.long) or torch.tensor([0] * n))")
        if tuple(value.shape) != (5,) or not _close(value, expected, 0, 0):
            raise mismatch(f"{label}.{name} starts wrong", given=label, expected=f"shape (5,), {_values(expected)}",
                           got=f"shape {tuple(value.shape)}, {_values(value)}",
                           cause="running_mean starts at zeros and running_var at ones, one value per feature")


@RUNNING_NORM_EXERCISE.check(points=1)
def buffers_follow_to(student: Submission, device: torch.device) -> None:
    """After .to(device).double() and a training step the buffers are on the device, float64/int64, in state_dict."""
    (x,) = _norm_batches(4, [6])
    module, label = _make_norm(student, device, 4)
    for when in ("after .to().double()", "after a training step"):
        for name in _BUFFERS:
            value = _buffer(module, name, label)
            want = torch.int64 if name == "num_batches_tracked" else torch.float64
            if value.dtype != want or not _on(value, device):
                if name == "num_batches_tracked" and value.is_floating_point():
                    cause = ("num_batches_tracked was made a floating tensor, so .double() converted it; register it "
                             "as torch.tensor(0, dtype=torch.long)")
                elif when.startswith("after .to"):
                    cause = ("it is not a registered buffer (a plain tensor attribute is left behind by .to() and "
                             ".double()): use self.register_buffer")
                else:
                    cause = ("forward replaced it with a new tensor created with the default dtype or on the cpu; "
                             "update it in place (or from tensors computed from x)")
                fail(f"{when}, {label}.{name} is {dtype_name(value.dtype)} on {value.device.type}; expected "
                     f"{dtype_name(want)} on {device.type}\n  likely cause: {cause}")
        state = student.run(module.state_dict, _label="RunningNorm.state_dict")
        for name in _BUFFERS:
            if name not in state:
                fail(f"{when}, {name} is not in {label}.state_dict() (keys: {list(state)}); register it with "
                     f"self.register_buffer({name!r}, ...)")
            if not torch.equal(state[name].cpu(), getattr(module, name).detach().cpu()):
                fail(f"{when}, state_dict()[{name!r}] differs from {label}.{name}: the saved tensor is not the one "
                     "the module uses (likely cause: the buffer and the attribute are two different tensors)")
        if when.startswith("after .to"):
            _forward(student, module, _fresh(x, device), label, _norm_error_hint)
    if int(getattr(module, "num_batches_tracked")) != 1:
        fail(f"after one training step, {label}.num_batches_tracked is {int(module.num_batches_tracked)}, expected 1 "
             "(likely cause: it is not incremented in training mode)")


@RUNNING_NORM_EXERCISE.check(points=1)
def train_matches_batchnorm(student: Submission, device: torch.device) -> None:
    """Training mode with the defaults: outputs and all three buffers match BatchNorm1d over several batches."""
    batches = _norm_batches(6, [8, 5, 16, 2, 9])
    steps = _batchnorm_trace(batches, 0.1, 1e-5)
    module, label = _make_norm(student, device, 6)
    _train_and_compare(student, module, label, device, steps, 0.1, 1e-5,
                       "training mode differs from nn.BatchNorm1d(6, affine=False)")


@RUNNING_NORM_EXERCISE.check(points=1)
def momentum_and_eps(student: Submission, device: torch.device) -> None:
    """Other momentum (0 included) and eps values (given positionally and by keyword) match BatchNorm1d."""
    settings = [((0.5, 1e-3), {}), ((), {"momentum": 1.0, "eps": 1e-2}), ((), {"eps": 1e-4, "momentum": 0.02}),
                ((), {"momentum": 0.0, "eps": 1e-3})]
    runs = []
    for args, kwargs in settings:
        momentum, eps = (args if args else (kwargs["momentum"], kwargs["eps"]))
        runs.append((args, kwargs, momentum, eps, _batchnorm_trace(_norm_batches(5, [7, 4, 10]), momentum, eps)))
    for args, kwargs, momentum, eps, steps in runs:
        module, label = _make_norm(student, device, 5, args, kwargs)
        try:
            _train_and_compare(student, module, label, device, steps, momentum, eps,
                               f"training mode differs from nn.BatchNorm1d(5, eps={eps}, momentum={momentum}, "
                               "affine=False)")
        except CheckFailed as exc:
            try:
                order = list(inspect.signature(student.get("RunningNorm")).parameters)
            except (TypeError, ValueError):  # a signature Python cannot read: no note, the failure stands
                order = []
            if args and "eps" in order and "momentum" in order and order.index("eps") < order.index("momentum"):
                raise CheckFailed(f"{exc}\n  note: your signature has eps before momentum (nn.BatchNorm1d's order); "
                                  "the spec is RunningNorm(num_features, momentum=0.1, eps=1e-5)") from None
            raise


@RUNNING_NORM_EXERCISE.check(points=1)
def momentum_none_cumulative(student: Submission, device: torch.device) -> None:
    """momentum=None keeps a cumulative average of the batch statistics, like BatchNorm1d(momentum=None)."""
    # Sizes where weighting by batch size (4/10, 12/22, ...) differs from both 1/k and the off-by-one 1/(k+1).
    steps = _batchnorm_trace(_norm_batches(4, [6, 4, 12, 5]), None, 1e-5)
    module, label = _make_norm(student, device, 4, (), {"momentum": None})
    _train_and_compare(student, module, label, device, steps, None, 1e-5,
                       "with momentum=None, training mode differs from nn.BatchNorm1d(4, momentum=None, affine=False)")


@RUNNING_NORM_EXERCISE.check(points=1)
def eval_uses_running_stats(student: Submission, device: torch.device) -> None:
    """In eval mode the output uses the running buffers (as BatchNorm1d's) and no buffer changes."""
    train = _norm_batches(4, [8, 6])
    evaluate = [b * 3 + 1 for b in _norm_batches(4, [5, 1, 7])]  # unlike the training data, so batch stats differ
    module, label = _make_norm(student, device, 4)
    for x in train:
        _forward(student, module, _fresh(x, device), label, _norm_error_hint)
    _module_call(student, module, "eval")
    frozen = {name: _buffer(module, name, label).detach().clone().cpu() for name in _BUFFERS}
    if frozen["running_var"].numel() != 4 or frozen["running_mean"].numel() != 4:
        fail(f"{label}.running_mean and running_var must hold one value per feature (4); see buffers_registered")
    # Expected: BatchNorm1d in eval mode holding the very running statistics the module holds now.
    bn = nn.BatchNorm1d(4, affine=False, dtype=torch.float64).eval()
    bn.running_mean.copy_(frozen["running_mean"].double().reshape(4))
    bn.running_var.copy_(frozen["running_var"].double().reshape(4))
    with one_torch_thread():
        expected = [bn(x.clone()).detach() for x in evaluate]
    for x, want in zip(evaluate, expected):
        x_in = _fresh(x, device)
        given = f"eval mode after 2 training batches, x = {_tensor_text(x_in)}"
        got = _forward(student, module, x_in, label, _norm_error_hint)

        def cause(x=x, got=got) -> str | None:
            batch = (x - x.mean(0)) / (x.var(0, unbiased=False) + 1e-5).sqrt()
            if _close(got, batch, _OUT_RTOL, _OUT_ATOL) and _tests_train_method(module):
                return ("eval mode still normalises with the batch's own statistics: `self.train` (no parentheses) "
                        "is a method, which is always true; the flag is `self.training`")
            return _named_cause(got.detach().cpu().double(), [
                (batch, "eval mode still normalises with the batch's own statistics; in eval mode (self.training is "
                        "False) use running_mean and running_var"),
                ((x - frozen["running_mean"]) / frozen["running_var"].sqrt().double(),
                 "eps is missing: divide by sqrt(running_var + eps)"),
                ((x - frozen["running_mean"]) / (frozen["running_var"].sqrt() + 1e-5),
                 "eps is added outside the square root: divide by sqrt(running_var + eps)"),
            ], _OUT_RTOL, _OUT_ATOL, want)

        _expect_tensor("eval mode gives the wrong output", given, got, want, rtol=_OUT_RTOL, atol=_OUT_ATOL,
                       value_cause=cause)
        for name in _BUFFERS:
            now = _buffer(module, name, label).detach().cpu()
            if now.shape != frozen[name].shape or not torch.equal(now, frozen[name]):
                raise mismatch(f"{name} changed in eval mode", given=given, expected=f"{_values(frozen[name])} "
                               "(unchanged)", got=_values(now),
                               cause="eval mode must change nothing: update the buffers (and num_batches_tracked) "
                                     "only when self.training is True")


@RUNNING_NORM_EXERCISE.check(points=1)
def buffers_hold_no_history(student: Submission, device: torch.device) -> None:
    """With an input that requires grad, the buffers get no autograd history (no grad_fn, requires_grad False)."""
    batches = _norm_batches(4, [6, 9])
    module, label = _make_norm(student, device, 4)
    for i, batch in enumerate(batches):
        x = _fresh(batch, device).requires_grad_(True)
        got = _forward(student, module, x, label, _norm_error_hint)
        for name in _BUFFERS:
            value = _buffer(module, name, label)
            if value.requires_grad or value.grad_fn is not None:
                fail(f"after batch {i + 1} in training mode with x = {_tensor_text(x)}, requires_grad=True, "
                     f"{label}.{name} holds autograd history (requires_grad={value.requires_grad}, "
                     f"grad_fn={type(value.grad_fn).__name__ if value.grad_fn is not None else None})\n"
                     "  likely cause: the running statistics were updated with the graph attached; update them "
                     "inside `with torch.no_grad():` or from detached values (mean.detach(), var.detach()). "
                     "Otherwise every step's graph stays alive through the buffers, and memory grows")
        _training_step_did_something(student, module, label, x, got, "the buffers' autograd history")
        if got.requires_grad:
            student.run(got.sum().backward, _label="backward through RunningNorm")


@RUNNING_NORM_EXERCISE.check(points=1)
def input_gradient_matches_batchnorm(student: Submission, device: torch.device) -> None:
    """In training mode, x.grad equals BatchNorm1d's (gradients flow through the batch mean and variance)."""
    batches = _norm_batches(5, [8, 3])
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
    module, label = _make_norm(student, device, 5)
    for batch, upstream, want, want_out in zip(batches, upstreams, expected, outputs):
        x = _fresh(batch, device).requires_grad_(True)
        given = f"loss = ({label}(x) * r).sum() in training mode, x = {_tensor_text(x)}"
        got = _forward(student, module, x, label, _norm_error_hint)
        if tuple(got.shape) != tuple(x.shape):
            fail(f"{given}\n  the output has shape {tuple(got.shape)}; it must have the input's shape "
                 f"{tuple(x.shape)} (see train_matches_batchnorm)")
        if not got.requires_grad:
            fail(f"{given}\n  the output has no autograd history, so no gradient reaches x\n  likely cause: the "
                 "normalisation runs under torch.no_grad() or uses x.detach(); keep no_grad for the buffer update")
        student.run((got * upstream.to(device=device, dtype=got.dtype)).sum().backward,
                    _label="backward through RunningNorm")
        if x.grad is None:
            fail(f"{given}\n  x.grad is None after backward (likely cause: x.detach() or x.data in forward)")

        def cause(batch=batch, upstream=upstream, grad=x.grad, got=got, want_out=want_out) -> str | None:
            if not _close(got, want_out, _OUT_RTOL, _OUT_ATOL):
                return "the training-mode output itself differs from BatchNorm1d's (see train_matches_batchnorm)"
            var_b = batch.var(0, unbiased=False)
            return _named_cause(grad.detach().cpu().double(), [
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
            ], 1e-6, 1e-9, want)

        if not _close(x.grad, want, 1e-6, 1e-9):
            raise mismatch("x.grad differs from nn.BatchNorm1d(affine=False)'s", given=given,
                           expected=_values(want), got=_values(x.grad), cause=cause())


def _tests_train_method(module: nn.Module) -> bool:
    """Whether the module's forward tests ``self.train`` (the method, always true) instead of ``self.training``."""
    try:
        source = inspect.getsource(type(module).forward)
    except (OSError, TypeError):
        return False
    return re.search(r"\bself\.train\b(?!\s*\()", source) is not None


def _detached_mean_grad(batch: torch.Tensor, upstream: torch.Tensor) -> torch.Tensor:
    x = batch.clone().requires_grad_(True)
    ((x - x.mean(0).detach()) / (x.var(0, unbiased=False) + 1e-5).sqrt() * upstream).sum().backward()
    return x.grad


def _detached_var_grad(batch: torch.Tensor, upstream: torch.Tensor) -> torch.Tensor:
    x = batch.clone().requires_grad_(True)
    ((x - x.mean(0)) / (x.var(0, unbiased=False).detach() + 1e-5).sqrt() * upstream).sum().backward()
    return x.grad


@RUNNING_NORM_EXERCISE.check(points=1)
def computes_statistics_itself(student: Submission, device: torch.device) -> None:
    """No F.batch_norm call and no BatchNorm submodule: the statistics are computed by the module itself."""
    batches = _norm_batches(4, [6, 5])
    module, label = _make_norm(student, device, 4)
    inner = [name or "(the module itself)" for name, m in module.named_modules()
             if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if inner:
        fail(f"{label} contains a BatchNorm module (`{inner[0]}`); the exercise is to compute the statistics "
             "yourself, with register_buffer and tensor operations (no nn.BatchNorm1d, no F.batch_norm)")
    first = _fresh(batches[0], device)
    with torch_calls() as calls:
        got = _forward(student, module, first, label, _norm_error_hint)
        _module_call(student, module, "eval")
        _forward(student, module, _fresh(batches[1], device), label, _norm_error_hint)
    used = sorted({n for n in calls.names if "batch_norm" in n or "instance_norm" in n})
    if used:
        fail(f"{label}'s forward called torch {', '.join(used)} (F.batch_norm, or a function built on it); the "
             "exercise is to compute the mean and variance yourself with tensor operations")
    _training_step_did_something(student, module, label, first, got, "how the statistics are computed")
