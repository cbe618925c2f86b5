"""Chapter 02 (autograd): checks for gelu_function, graph_ops and grad_accumulation.

Every expected value comes from PyTorch itself and is computed before the student's code runs, on
tensors and models the student never sees:

- ``gelu_function``: ``torch.nn.functional.gelu(x, approximate="tanh")`` and autograd through it, and
  ``torch.autograd.gradcheck`` on the student's own function;
- ``graph_ops``: a walk of ``grad_fn.next_functions`` (the test suite proves it visits exactly the nodes
  the autograd engine executes);
- ``grad_accumulation``: ordinary training (one forward and backward per concatenated window) of a
  deep copy of the model with its own optimizer.

Known mistakes are named: each check compares a wrong answer with what the usual slips would give
(a wrong constant, a missing factor, a node counted once per path, an unscaled loss...).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import textwrap
from collections import Counter
from collections.abc import Callable, Mapping

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.gradcheck import GradcheckError

from graders.core import (
    CheckFailed,
    StudentCodeError,
    Submission,
    dtype_name,
    exercise,
    expect_error,
    fail,
    mismatch,
)
from graders.watch import torch_calls


def _describe(t: torch.Tensor) -> str:
    layout = "" if t.is_contiguous() else f", non-contiguous (strides {tuple(t.stride())})"
    return f"a {dtype_name(t.dtype)} tensor of shape {tuple(t.shape)} on {t.device.type}{layout}"


# ==================================================================================================
# gelu_function
# ==================================================================================================
GELU = exercise("gelu_function", chapter="02_autograd", names=["GELUFunction"])

_BETA = math.sqrt(2.0 / math.pi)
_KAPPA = 0.044715
# (rtol, atol) for comparing values and gradients with torch's own, per dtype. bfloat16 keeps 8
# significant bits and the formula chains several roundings, so its tolerance is loose (a few ulps);
# the exact formula is checked in float32 and float64. In float64 the tolerance (like torch.testing's
# rtol for float64) accepts a constant written with 8 or more digits (0.79788456, as in Megatron-LM's
# GELU, errs by ~1e-8) and still rejects a forward or backward that works in float32 (errors of 1e-7 and
# up, and 100% where 1 + tanh(u) cancels).
_TOLERANCE = {torch.float64: (1e-7, 1e-9), torch.float32: (1e-5, 1e-5), torch.bfloat16: (0.04, 0.04)}
_GRAD_TOLERANCE = {torch.float64: (1e-7, 1e-9), torch.float32: (1e-5, 1e-5), torch.bfloat16: (0.04, 0.04)}
_FLOAT32_PRECISION = ("something works in float32 (a .float() cast, or a constant made with torch.tensor(...), "
                      "which is float32, that the result is cast to), or a constant is rounded to too few digits "
                      "(use math.sqrt(2 / math.pi) and 0.044715)")


def _torch_gelu(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x.detach(), approximate="tanh")


def _torch_gelu_grad(x: torch.Tensor, grad_output: torch.Tensor) -> torch.Tensor:
    """d/dx of F.gelu(x, approximate="tanh") times ``grad_output``, by autograd on an independent copy."""
    leaf = x.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(F.gelu(leaf, approximate="tanh"), leaf, grad_output)
    return grad


def _tanh_gelu(x, half=0.5, beta=_BETA, kappa=_KAPPA, power=3):
    return half * x * (1 + torch.tanh(beta * (x + kappa * x**power)))


def _near(dtype: torch.dtype) -> dict:
    """How close a result must be to a wrong formula's to name that slip; a wrong formula is only used
    where it is at least that far from the right one, so the two can be told apart."""
    return dict(rtol=0.04, atol=0.04) if dtype == torch.bfloat16 else dict(rtol=1e-3, atol=1e-4)


def _forward_cause(x: torch.Tensor, got: torch.Tensor) -> str | None:
    """Name the slip when the student's forward equals a known wrong formula (compared in float64)."""
    x64, got64 = x.detach().double(), got.detach().double()
    near = _near(x.dtype)
    if not torch.isfinite(got64).all() and torch.isfinite(x64).all():
        where = x64[~torch.isfinite(got64)]
        return (f"the result is nan/inf at x = {where[0].item():g}: an intermediate overflows for large |x| (tanh "
                "written with exp: exp(2u) = inf gives inf/inf); use torch.tanh")
    erf_gelu = 0.5 * x64 * (1 + torch.erf(x64 / math.sqrt(2)))
    known = [
        (_tanh_gelu(x64, kappa=0.44715), "the constant is 0.44715; it must be 0.044715"),
        (_tanh_gelu(x64, kappa=0.0447), "the constant is rounded to 0.0447; it must be 0.044715"),
        (_tanh_gelu(x64, beta=math.sqrt(math.pi / 2)), "sqrt(pi/2) is used; the factor is sqrt(2/pi)"),
        (_tanh_gelu(x64, beta=math.sqrt(2 * math.pi)), "sqrt(2*pi) is used; the factor is sqrt(2/pi)"),
        (_tanh_gelu(x64, beta=2 / math.pi), "2/pi is used without the square root; the factor is sqrt(2/pi)"),
        (_tanh_gelu(x64, half=1.0), "the 0.5 factor is missing"),
        (_tanh_gelu(x64, power=2), "x**2 is used; the cubic term is 0.044715 * x**3"),
        (_tanh_gelu(x64, kappa=0.0), "the cubic term 0.044715 * x**3 inside tanh is missing"),
        (erf_gelu, "this is the exact GELU, 0.5*x*(1 + erf(x/sqrt(2))) (F.gelu's default); the exercise asks "
                   "for the tanh approximation"),
        (x64 * torch.sigmoid(_BETA * (x64 + _KAPPA * x64**3)),
         "x*sigmoid(u) is not the same: 0.5*(1 + tanh(u)) equals sigmoid(2*u), so the factor 2 is missing"),
        (0.5 * (1 + torch.tanh(_BETA * (x64 + _KAPPA * x64**3))), "the factor x in front is missing"),
    ]
    right = _tanh_gelu(x64)
    for wrong, cause in known:
        if not torch.allclose(wrong, right, **near) and torch.allclose(got64, wrong, **near):
            return cause
    if x.dtype == torch.float64:
        in_float32 = _tanh_gelu(x64.float()).double()
        if torch.allclose(got64, in_float32, rtol=1e-5, atol=1e-6):
            return f"the values have float32 precision only: {_FLOAT32_PRECISION}"
    return None


def _tanh_gelu_derivative(x: torch.Tensor, beta: float = _BETA, kappa: float = _KAPPA) -> torch.Tensor:
    t = torch.tanh(beta * (x + kappa * x**3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t**2) * beta * (1 + 3 * kappa * x**2)


def _derivative_variants(x: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
    """The derivatives that the usual slips give, each with the slip's name (x in float64)."""
    t = torch.tanh(_BETA * (x + _KAPPA * x**3))
    du = _BETA * (1 + 3 * _KAPPA * x**2)
    first, sech2 = 0.5 * (1 + t), 1 - t**2
    t_big = torch.tanh(_BETA * (x + 0.44715 * x**3))
    normal = torch.exp(-0.5 * x**2) / math.sqrt(2 * math.pi)
    return [
        (first + x * sech2 * du, "the derivative is missing the 0.5 factor on its second term, "
                                 "0.5 * x * (1 - tanh(u)**2) * du/dx"),
        ((1 + t) + x * sech2 * du, "the derivative is missing the 0.5 factor (on both terms of the product rule)"),
        ((1 + t) + 0.5 * x * sech2 * du,
         "the derivative is missing the 0.5 factor on its first term, 0.5 * (1 + tanh(u))"),
        (first + 0.5 * x * sech2 * _BETA * (1 + _KAPPA * x**2),
         "the derivative of 0.044715 * x**3 is 3 * 0.044715 * x**2: the factor 3 is missing"),
        (first + 0.5 * x * sech2 * (1 + 3 * _KAPPA * x**2), "du/dx is missing the sqrt(2/pi) factor"),
        (first + 0.5 * x * sech2 * _BETA * (1 + 3 * _KAPPA * x),
         "du/dx = sqrt(2/pi) * (1 + 3 * 0.044715 * x**2): the x is squared (the derivative of x**3 is 3 * x**2)"),
        (first + 0.5 * x * sech2 * _BETA * (1 + 3 * x**2),
         "du/dx = sqrt(2/pi) * (1 + 3 * 0.044715 * x**2): the 0.044715 factor is missing"),
        (_tanh_gelu_derivative(x, beta=math.sqrt(2 * math.pi)), "sqrt(2*pi) is used; the factor is sqrt(2/pi)"),
        (_tanh_gelu_derivative(x, beta=math.sqrt(math.pi / 2)), "sqrt(pi/2) is used; the factor is sqrt(2/pi)"),
        (_tanh_gelu_derivative(x, beta=2 / math.pi),
         "2/pi is used without the square root; the factor is sqrt(2/pi)"),
        (first + 0.5 * x * sech2, "the chain rule inside tanh is missing: tanh(u) differentiates to "
                                   "(1 - tanh(u)**2) * du/dx, with du/dx = sqrt(2/pi) * (1 + 3 * 0.044715 * x**2)"),
        (first + 0.5 * x * (1 - t) * du, "tanh'(u) is 1 - tanh(u)**2, not 1 - tanh(u)"),
        (first + 0.5 * x * (1 + t**2) * du, "tanh'(u) is 1 - tanh(u)**2, not 1 + tanh(u)**2"),
        (0.5 * x * sech2 * du, "product rule: the term 0.5 * (1 + tanh(u)) (from differentiating x) is missing"),
        (first, "product rule: the term 0.5 * x * d/dx tanh(u) is missing"),
        (0.5 * (1 + t_big) + 0.5 * x * (1 - t_big**2) * _BETA * (1 + 3 * 0.44715 * x**2),
         "the constant is 0.44715; it must be 0.044715"),
        (0.5 * (1 + torch.erf(x / math.sqrt(2))) + x * normal,
         "this is the derivative of the exact (erf) GELU; the exercise asks for the tanh approximation"),
        (_tanh_gelu(x), "backward returns GELU's value, not its derivative"),
    ]


def _backward_cause(x: torch.Tensor, grad_output: torch.Tensor, got: torch.Tensor) -> str | None:
    """Name the slip when the student's gradient equals grad_output times a known wrong derivative."""
    x64, g64, got64 = x.detach().double(), grad_output.detach().double(), got.detach().double()
    near = _near(x.dtype)
    t = torch.tanh(_BETA * (x64 + _KAPPA * x64**3))
    correct = 0.5 * (1 + t) + 0.5 * x64 * (1 - t**2) * _BETA * (1 + 3 * _KAPPA * x64**2)
    bad = ~torch.isfinite(got64) & torch.isfinite(g64 * correct)
    if bad.any():
        where = x64[bad][0].item()
        return (f"the gradient is nan/inf at x = {where:g}: "
                + ("a division by x (for instance output / x for 0.5 * (1 + tanh(u))) is 0/0 at x = 0; compute "
                   "0.5 * (1 + tanh(u)) directly" if where == 0 else
                   "an intermediate overflows for large |x| (cosh or exp of a large argument); use 1 - tanh(u)**2"))
    if not torch.allclose(g64 * correct, correct, **near) and torch.allclose(got64, correct, **near):
        return ("backward ignores grad_output: it must return grad_output * (the derivative), the chain rule "
                "that carries the gradient of whatever comes after GELU")
    twice = g64 * g64 * correct
    if not torch.allclose(twice, g64 * correct, **near) and torch.allclose(got64, twice, **near):
        return "grad_output is multiplied in twice"
    for derivative, cause in _derivative_variants(x64):
        wrong = g64 * derivative
        if not torch.allclose(wrong, g64 * correct, **near) and torch.allclose(got64, wrong, **near):
            return cause
    if x.dtype == torch.float64 and torch.allclose(got64, g64 * correct, rtol=1e-5, atol=1e-6):
        return f"the gradient has float32 precision only: in backward, {_FLOAT32_PRECISION}"
    return None


def _gelu_class(student: Submission) -> type:
    cls = student.get("GELUFunction")
    if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)):
        fail(f"GELUFunction is a {type(cls).__name__}; it must be a class that subclasses torch.autograd.Function "
             "(with static forward and backward methods), used as GELUFunction.apply(x)")
    return cls


def _apply(student: Submission, x: torch.Tensor) -> torch.Tensor:
    """``GELUFunction.apply(x)`` on the check's own tensor (not copied: autograd must see this very x)."""
    out = student.run(_gelu_class(student).apply, x, _label="GELUFunction.apply")
    if isinstance(out, tuple) and len(out) == 1 and isinstance(out[0], torch.Tensor):
        fail(f"GELUFunction.apply({_describe(x)}) returned a tuple holding one tensor; forward must return the "
             "tensor itself")
    if not isinstance(out, torch.Tensor):
        fail(f"GELUFunction.apply({_describe(x)}) returned {type(out).__name__}; forward must return a tensor")
    return out


def _backward(student: Submission, out: torch.Tensor, leaf: torch.Tensor, grad_output: torch.Tensor) -> torch.Tensor:
    """Run the student's backward (through autograd) and return d(out)/d(leaf) weighted by grad_output."""
    if out.grad_fn is None:
        fail("the output of GELUFunction.apply(x) has no grad_fn although x requires grad, so no gradient can "
             "flow back (likely cause: forward returned a detached tensor, or GELUFunction is not used through .apply)")
    (grad,) = student.run(torch.autograd.grad, out, leaf, grad_output, _label="GELUFunction.backward")
    return grad


def _expect_same_kind(what: str, given: str, x: torch.Tensor, got: torch.Tensor) -> None:
    if tuple(got.shape) != tuple(x.shape):
        raise mismatch(what, given=given, expected=f"shape {tuple(x.shape)} (GELU acts elementwise)",
                       got=f"shape {tuple(got.shape)}", cause="the output must have the input's shape")
    if got.device != x.device:
        raise mismatch(what, given=given, expected=f"a result on {x.device.type}", got=f"a result on {got.device.type}",
                       cause="a tensor made on the cpu (e.g. torch.tensor(...) for a constant); use Python floats "
                             "or create it on x.device")
    if got.dtype != x.dtype:
        cause = ("the result must keep x's dtype: something promoted it (a float64 constant tensor, a .double() or "
                 ".float() cast); convert back with .to(x.dtype) or use Python floats as constants")
        raise mismatch(what, given=given, expected=f"dtype {dtype_name(x.dtype)}",
                       got=f"dtype {dtype_name(got.dtype)}", cause=cause)


def _worst(x: torch.Tensor, expected: torch.Tensor, got: torch.Tensor) -> tuple[str, str, str]:
    """(x value, expected value, got value) at the element where the two disagree most."""
    x64, e64, g64 = (t.detach().double().flatten() for t in (x, expected, got))
    error = (g64 - e64).abs().nan_to_num(nan=math.inf)
    i = int(error.argmax())
    want, have = e64[i].item(), g64[i].item()
    digits = 8
    while digits < 17 and f"{want:.{digits}g}" == f"{have:.{digits}g}":
        digits += 1  # enough digits to show where the two differ
    return f"{x64[i].item():.6g}", f"{want:.{digits}g}", f"{have:.{digits}g}"


def _close(got: torch.Tensor, expected: torch.Tensor, tolerance: tuple[float, float]) -> bool:
    rtol, atol = tolerance
    return torch.allclose(got.detach().double(), expected.double(), rtol=rtol, atol=atol)


def _expect_forward(student: Submission, x: torch.Tensor, what: str, given: str) -> torch.Tensor:
    expected = _torch_gelu(x)
    before = x.detach().clone()
    got = _apply(student, x)
    _expect_same_kind(what, given, x, got)
    if not torch.equal(x.detach(), before):
        fail(f"{what}\n  input: {given}\n  GELUFunction.apply changed its input x in place (x.mul_, x **= ..., "
             "x.pow_); compute into new tensors and leave x as it was")
    if not _close(got, expected, _TOLERANCE[x.dtype]):
        at, want, have = _worst(x, expected, got)
        raise mismatch(what, given=f"{given}; worst at x = {at}",
                       expected=f"{want}  (F.gelu(x, approximate=\"tanh\"))", got=have, cause=_forward_cause(x, got))
    return got


def _expect_grad(student: Submission, out: torch.Tensor, leaf: torch.Tensor, x: torch.Tensor, grad_output: torch.Tensor,
                 expected: torch.Tensor, what: str, given: str) -> None:
    got = _backward(student, out, leaf, grad_output)
    if got is None or tuple(got.shape) != tuple(leaf.shape):
        shape = None if got is None else tuple(got.shape)
        raise mismatch(what, given=given, expected=f"a gradient of shape {tuple(leaf.shape)}", got=f"shape {shape}",
                       cause="backward must return one gradient with the input's shape: grad_output * derivative")
    if not _close(got, expected, _GRAD_TOLERANCE[leaf.dtype]):
        at, want, have = _worst(leaf, expected, got)
        cause = _backward_cause(x, grad_output, got) if got.shape == x.shape else None
        raise mismatch(what, given=f"{given}; worst at x = {at}",
                       expected=f"{want}  (autograd through F.gelu(x, approximate=\"tanh\"))", got=have, cause=cause)


def _gelu_values(dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A spread of inputs: a fine grid, random values, zero, and large magnitudes where naive code overflows."""
    grid = torch.linspace(-6, 6, 61, dtype=torch.float64)
    extremes = torch.tensor([0.0, -0.0, 1e-4, -1e-4, 9.0, -9.0, 12.0, -12.0, 30.0, -30.0], dtype=torch.float64)
    values = torch.cat([grid, torch.randn(40, dtype=torch.float64) * 2.5, extremes])
    return values.to(dtype).to(device)


@GELU.check(points=1)
def forward_matches_torch(student: Submission, device: torch.device) -> None:
    """Values equal F.gelu(x, approximate="tanh") in float32 and float64, with x's shape and dtype."""
    for dtype in (torch.float32, torch.float64):
        x = _gelu_values(dtype, device).reshape(-1, 3).requires_grad_(True)
        _expect_forward(student, x, f"GELUFunction.apply(x) differs from F.gelu(x, approximate=\"tanh\") in "
                                    f"{dtype_name(dtype)}", _describe(x) + " with values in [-30, 30]")


@GELU.check(points=1)
def backward_matches_torch(student: Submission, device: torch.device) -> None:
    """backward returns grad_output * d/dx GELU(x), as autograd through F.gelu does (float32, float64)."""
    for dtype in (torch.float32, torch.float64):
        x = _gelu_values(dtype, device).reshape(-1, 3).requires_grad_(True)
        grad_output = (torch.randn(x.shape, dtype=torch.float64) * 2).to(dtype).to(device)
        expected = _torch_gelu_grad(x, grad_output)
        out = _apply(student, x)
        given = f"{_describe(x)} with values in [-30, 30], and a random grad_output (not all ones)"
        what = f"the gradient of GELUFunction differs from autograd's through F.gelu in {dtype_name(dtype)}"
        _expect_grad(student, out, x, x, grad_output, expected, what, given)


def _gradcheck_text(error: BaseException, limit: int = 24) -> str:
    lines = str(error).strip().splitlines()
    shown = lines[:limit] + (["..."] if len(lines) > limit else [])
    return textwrap.indent("\n".join(shown), "    | ")


@GELU.check(points=1)
def gradcheck_float64(student: Submission, device: torch.device) -> None:
    """torch.autograd.gradcheck(GELUFunction.apply, (x,)) passes for float64 x (contiguous and not)."""
    cls = _gelu_class(student)
    inputs = [
        torch.randn(4, dtype=torch.float64).mul(2).to(device).requires_grad_(True),
        torch.randn(2, 2, dtype=torch.float64).mul(2).to(device).t().detach().requires_grad_(True),
    ]
    for x in inputs:
        try:
            student.run(torch.autograd.gradcheck, cls.apply, (x,), eps=1e-6, atol=1e-5, rtol=1e-3,
                        _label="torch.autograd.gradcheck(GELUFunction.apply, (x,))")
        except StudentCodeError as exc:
            if not isinstance(exc.exception, GradcheckError):
                raise
            lines = [f"torch.autograd.gradcheck(GELUFunction.apply, (x,)) failed for x = {_describe(x)}; "
                     "its report (numerical = finite differences of your forward, analytical = your backward):",
                     _gradcheck_text(exc.exception)]
            cause = _gradcheck_cause(student, x)
            if cause:
                lines.append(f"  likely cause: {cause}")
            raise CheckFailed("\n".join(lines)) from None


def _gradcheck_cause(student: Submission, x: torch.Tensor) -> str | None:
    """After a failed gradcheck: is it the backward formula, or a forward that lost float64 precision?"""
    leaf = x.detach().clone().requires_grad_(True)
    # A grad_output that is not all ones (so a backward that ignores it shows), without drawing random numbers.
    grad_output = torch.linspace(-1.5, 2.0, leaf.numel(), dtype=leaf.dtype).reshape(leaf.shape).to(leaf.device)
    expected_grad = _torch_gelu_grad(leaf, grad_output)
    expected = _torch_gelu(leaf)
    try:
        out = _apply(student, leaf)
        got_grad = _backward(student, out, leaf, grad_output)
    except (CheckFailed, StudentCodeError):
        return None
    if got_grad.shape == leaf.shape and not _close(got_grad, expected_grad, _GRAD_TOLERANCE[torch.float64]):
        return (_backward_cause(leaf, grad_output, got_grad)
                or "backward does not return the derivative of what forward computes")
    if out.dtype == torch.float64 and not _close(out, expected, _TOLERANCE[torch.float64]):
        return _forward_cause(leaf, out) or "forward's values differ from F.gelu's"
    return None


@GELU.check(points=1)
def bfloat16(student: Submission, device: torch.device) -> None:
    """bfloat16 input: bfloat16 output and gradient, close to F.gelu's (loose tolerance)."""
    x = _gelu_values(torch.float64, device)
    x = x[x.abs() <= 12].to(torch.bfloat16).requires_grad_(True)
    grad_output = torch.randn(x.shape).to(torch.bfloat16).to(device)
    expected_grad = _torch_gelu_grad(x, grad_output)
    given = _describe(x) + " with values in [-12, 12]"
    out = _expect_forward(student, x, "GELUFunction.apply(x) is wrong for a bfloat16 x (compared loosely, within "
                                      "4% or 0.04, with F.gelu)", given)
    _expect_grad(student, out, x, x, grad_output, expected_grad,
                 "the gradient of GELUFunction is wrong for a bfloat16 x (compared loosely, within 4% or 0.04)",
                 given + ", and a random bfloat16 grad_output")


@GELU.check(points=1)
def any_shape_and_layout(student: Submission, device: torch.device) -> None:
    """0-d, empty, 4-D, transposed, sliced and expanded (stride 0) inputs: right values and gradients."""
    cases: list[tuple[str, tuple[int, ...], Callable[[torch.Tensor], torch.Tensor]]] = [
        ("a 0-d tensor", (), lambda b: b),
        ("an empty tensor", (0, 3), lambda b: b),
        ("a 4-D tensor", (2, 3, 2, 2), lambda b: b),
        ("a transposed view x = base.t()", (4, 3), lambda b: b.t()),
        ("a sliced view x = base[:, ::2]", (3, 6), lambda b: b[:, ::2]),
        ("an expanded view x = base.expand(4, 5)", (1, 5), lambda b: b.expand(4, 5)),
    ]
    prepared = []
    for name, shape, view in cases:
        base = (torch.randn(shape) * 3).to(device).requires_grad_(True)
        x = view(base)
        # 2-D cases get a non-contiguous grad_output too (a backward that calls .view() on it would break)
        if x.dim() == 2:
            grad_output = torch.randn(x.shape[1], x.shape[0]).to(device).t()
        else:
            grad_output = torch.randn(x.shape).to(device)
        leaf = base.detach().clone().requires_grad_(True)
        (expected_grad,) = torch.autograd.grad(F.gelu(_same_view(leaf, base, x), approximate="tanh"), leaf, grad_output)
        prepared.append((name, base, x, grad_output, expected_grad))
    for name, base, x, grad_output, expected_grad in prepared:
        given = f"{name}: {_describe(x)}"
        out = _expect_forward(student, x, f"GELUFunction.apply is wrong for {name}", given)
        _expect_grad(student, out, base, x, grad_output, expected_grad,
                     f"the gradient of GELUFunction is wrong for {name}",
                     given + "; the gradient is taken w.r.t. base" + (", with a non-contiguous grad_output"
                                                                      if not grad_output.is_contiguous() else ""))
    plain = (torch.randn(3, 4) * 2).to(device)
    _expect_forward(student, plain, "GELUFunction.apply is wrong for an input that does not require grad",
                    _describe(plain) + " with requires_grad=False")


def _same_view(leaf: torch.Tensor, base: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The view of ``leaf`` that ``x`` is of ``base`` (same sizes, strides and offset relative to base)."""
    return leaf.as_strided(x.shape, x.stride(), x.storage_offset() - base.storage_offset() + leaf.storage_offset())


@GELU.check(points=1)
def two_calls_in_one_graph(student: Submission, device: torch.device) -> None:
    """Two applications in one graph each keep their own saved input (state lives on ctx)."""
    a = torch.linspace(-3, 3, 7, dtype=torch.float64).to(device).requires_grad_(True)
    b = (torch.randn(7, dtype=torch.float64) * 2).to(device).requires_grad_(True)
    ga, gb = torch.randn(7, dtype=torch.float64).to(device), torch.randn(7, dtype=torch.float64).to(device)
    expected_a, expected_b = _torch_gelu_grad(a, ga), _torch_gelu_grad(b, gb)
    out_a = _apply(student, a)
    out_b = _apply(student, b)
    got = student.run(torch.autograd.grad, (out_a, out_b), (a, b), (ga, gb), _label="GELUFunction.backward")
    for name, other, leaf, g, expected, got_grad in [("a", b, a, ga, expected_a, got[0]),
                                                     ("b", a, b, gb, expected_b, got[1])]:
        if _close(got_grad, expected, _GRAD_TOLERANCE[torch.float64]):
            continue
        cause = _backward_cause(leaf, g, got_grad)
        if _close(got_grad, _torch_gelu_grad(other, g), _GRAD_TOLERANCE[torch.float64]):
            cause = ("the two calls share their saved input: the gradient for the first call was computed at the "
                     "second call's x; save tensors on ctx (ctx.save_for_backward(x)), never on the class, a global "
                     "or a closure, because every call gets its own ctx")
        at, want, have = _worst(leaf, expected, got_grad)
        raise mismatch("with two GELUFunction.apply calls in one graph, a gradient is wrong",
                       given=f"out_a = GELUFunction.apply(a), out_b = GELUFunction.apply(b) (two float64 tensors "
                             f"of shape (7,)), then one backward through both; gradient for {name}, worst at "
                             f"{name} = {at}",
                       expected=want, got=have, cause=cause)


@GELU.check(points=1)
def saves_input_for_backward(student: Submission, device: torch.device) -> None:
    """Changing x in place after forward makes backward raise autograd's version-counter error."""
    leaf = torch.randn(6).to(device).requires_grad_(True)
    grad_output = torch.randn(6).to(device)
    x = leaf * 1.0  # a non-leaf: it may be changed in place
    out = _apply(student, x)
    with torch.no_grad():
        x.mul_(2.0)
    at_new = _torch_gelu_grad(x, grad_output)
    at_old = _torch_gelu_grad(x / 2.0, grad_output)
    try:
        got = _backward(student, out, leaf, grad_output)
    except StudentCodeError as exc:
        if isinstance(exc.exception, RuntimeError) and "modified by an inplace operation" in str(exc.exception):
            return  # autograd noticed the change: x was saved with ctx.save_for_backward
        raise
    cause = ("backward must get x from ctx.saved_tensors after ctx.save_for_backward(x) in forward; autograd then "
             "checks that x was not changed since forward")
    tolerance = _GRAD_TOLERANCE[torch.float32]
    if got is not None and _close(got, at_new, tolerance) and not _close(got, at_old, tolerance):
        cause = ("x was kept as an attribute (ctx.x = x, or a global) instead of ctx.save_for_backward(x), or "
                 "saved as x.data (which escapes autograd's version tracking), so backward silently used the "
                 "CHANGED values: a wrong gradient and no error")
    elif got is not None and _close(got, at_old, tolerance):
        cause = ("backward used its own copy (a clone, or intermediate results) instead of x saved with "
                 "ctx.save_for_backward(x), so the in-place change of x went unnoticed")
    fail("x = leaf * 1; out = GELUFunction.apply(x); x.mul_(2) in place; then backward through out did not "
         "raise autograd's error \"one of the variables needed for gradient computation has been modified by an "
         f"inplace operation\"\n  likely cause: {cause}")


@GELU.check(points=1)
def computes_formula_itself(student: Submission, device: torch.device) -> None:
    """forward and backward compute the formula: no F.gelu, nn.GELU or torch.ops.aten.gelu."""
    x = (torch.randn(5) * 2).to(device).requires_grad_(True)
    grad_output = torch.randn(5).to(device)
    rule = ("the exercise is to compute the formula yourself: GELUFunction must not call torch.nn.functional.gelu, "
            "nn.GELU or autograd through them")
    with torch_calls() as calls:
        out = _apply(student, x)
    if any("gelu" in name.lower() for name in calls.names):
        fail(f"forward called torch's gelu ({', '.join(n for n in calls.names if 'gelu' in n.lower())}); {rule}")
    if out.grad_fn is None:
        fail("the output of GELUFunction.apply(x) has no grad_fn although x requires grad")
    # The autograd engine does not run torch-function modes inside backward, so call the node here (for a
    # custom Function the node is the ctx, and node.apply runs GELUFunction.backward with it).
    with torch_calls() as calls:
        student.run(out.grad_fn.apply, grad_output, _label="GELUFunction.backward")
    if any("gelu" in name.lower() for name in calls.names):
        fail(f"backward called torch's gelu ({', '.join(n for n in calls.names if 'gelu' in n.lower())}); {rule}")


# ==================================================================================================
# graph_ops
# ==================================================================================================
GRAPH_OPS = exercise("graph_ops", chapter="02_autograd", names=["graph_ops"])
_GRAPH_OPS_TIME_LIMIT_S = 5.0  # a walk that follows every path of a 2**30-path graph is stopped here


@dataclasses.dataclass
class _Graph:
    """The nodes reachable from a root, found by the grader's own walk over ``next_functions``."""

    nodes: list  # in breadth-first order; the list keeps them alive, so their identity is stable
    counts: Counter
    paths: Counter  # what counting every path (no "seen" set) gives: sum over nodes of #paths to it
    first_input_only: Counter  # what following only next_functions[0] gives


def _walk_graph(t: torch.Tensor) -> _Graph:
    root = t.grad_fn
    if root is None:
        return _Graph([], Counter(), Counter(), Counter())
    order, seen, edges = [root], {root}, {}
    i = 0
    while i < len(order):
        node = order[i]
        i += 1
        children = []
        for child, _ in node.next_functions:
            if child is None:  # an input that does not require grad: not a node
                continue
            children.append(child)
            if child not in seen:
                seen.add(child)
                order.append(child)
        edges[node] = children
    counts = Counter(type(n).__name__ for n in order)
    # Number of paths from the root to each node, in topological order (Kahn's algorithm).
    indegree = Counter(child for children in edges.values() for child in children)
    ready, npaths = [root], Counter({root: 1})
    while ready:
        node = ready.pop()
        for child in edges[node]:
            npaths[child] += npaths[node]
            indegree[child] -= 1
            if indegree[child] == 0:
                ready.append(child)
    paths = Counter()
    for node in order:
        paths[type(node).__name__] += npaths[node]
    first, node = Counter(), root
    while node is not None:
        first[type(node).__name__] += 1
        node = node.next_functions[0][0] if node.next_functions else None
    return _Graph(order, counts, paths, first)


def _as_counts(got) -> dict | None:
    if isinstance(got, Mapping):
        return {k: v for k, v in got.items() if v != 0}
    return None


def _counts_causes(graph: _Graph, got: dict) -> list[str]:
    """The known slips whose wrong walk gives exactly the student's counts on this graph."""
    keys = list(got)
    if any(isinstance(k, type) for k in keys):
        return ["the keys are node classes; use their names, type(node).__name__"]
    if any(isinstance(k, str) and "::" in k for k in keys):
        return ["node.name() gives 'torch::autograd::AccumulateGrad' for leaves; the keys are type(node).__name__, "
                "which gives 'AccumulateGrad'"]
    if any(isinstance(k, str) and k.startswith("<class") for k in keys):
        return ["str(type(node)) gives \"<class 'MulBackward0'>\"; the keys are type(node).__name__"]
    none_keys = [k for k in keys if k is None or k in ("NoneType", "None")]
    if none_keys:
        return [f"a None entry of next_functions was counted as a node (key {none_keys[0]!r}); None marks an input "
                "that does not require grad: skip it"]
    if any(not isinstance(k, str) for k in keys):
        return ["the keys must be the type names of the nodes (strings), type(node).__name__"]
    if keys and all(len(k) == 1 for k in keys):
        return ["the keys are single letters: Counter.update(name) with a string counts its letters; add one per node "
                "with counts[name] += 1 (or counts.update([name]))"]
    rest, expected = Counter(got), graph.counts
    root = type(graph.nodes[0]).__name__ if graph.nodes else None
    known = [
        (graph.paths, "a node reached by two (or more) paths was counted twice (once per path); keep a set of the "
                      "nodes already seen and count each node once"),
        (expected - Counter({root: 1}) if root else None,
         "t.grad_fn itself was not counted; the walk starts at it and it counts too"),
        (expected - Counter({"AccumulateGrad": expected["AccumulateGrad"]}),
         "the AccumulateGrad nodes are missing: each leaf that requires grad is reached through one AccumulateGrad "
         "node, and those count too"),
        (Counter({k: 1 for k in expected}),
         "each node type was counted once; each node adds 1 to its type's count (two MulBackward0 nodes: 2)"),
        (graph.first_input_only,
         "only the first entry of next_functions was followed; a node's inputs are ALL of its next_functions"),
    ]
    return [cause for wrong, cause in known if wrong is not None and wrong != expected and rest == wrong]


def _difference(graph: _Graph, got: dict) -> str | None:
    rest = Counter({k: v for k, v in got.items() if isinstance(v, int)})
    parts = []
    if graph.counts - rest:
        parts.append(f"missing {_show_counts(graph.counts - rest)}")
    if rest - graph.counts:
        parts.append(f"extra {_show_counts(rest - graph.counts)}")
    return "; ".join(parts) or None


def _show_counts(c) -> str:
    if isinstance(c, Counter):
        return "Counter({" + ", ".join(f"{k!r}: {v}" for k, v in sorted(c.items(), key=lambda kv: str(kv[0]))) + "})"
    return repr(c)


def _call_graph_ops(student: Submission, t: torch.Tensor, description: str):
    """``graph_ops(t)``; an error names the input, and the usual slip where it is known."""
    try:
        return student.run(student.get("graph_ops"), t, _label="graph_ops")
    except StudentCodeError as exc:
        message = f"graph_ops(t) for {description} failed: {exc}"
        error = exc.exception
        if isinstance(error, AttributeError) and "'tuple' object has no attribute" in str(error):
            message += ("\n  likely cause: each entry of node.next_functions is a pair (next_node, input_nr); unpack "
                        "it: for child, _ in node.next_functions")
        elif isinstance(error, AttributeError) and "NoneType" in str(error):
            message += ("\n  likely cause: t.grad_fn is None for a leaf or a tensor that does not require grad (return "
                        "an empty Counter then), and a None entry of next_functions marks an input that does not "
                        "require grad (skip it)")
        elif isinstance(error, RecursionError):
            message += ("\n  likely cause: a recursive walk deeper than Python's recursion limit; walk with an "
                        "explicit stack or queue instead")
        raise StudentCodeError(message, error) from None


def _expect_counts(student: Submission, cases: list[tuple[str, torch.Tensor]], what: str) -> list:
    """Run graph_ops on every (description, t); report the first wrong one, with the slip that explains them all.

    Returns what graph_ops returned for each case.
    """
    graphs = [_walk_graph(t) for _, t in cases]  # before the student's code runs
    failures, results = [], []
    for (description, t), graph in zip(cases, graphs):
        got = _call_graph_ops(student, t, description)
        results.append(got)
        counts = _as_counts(got)
        if counts is None:
            raise mismatch(what, given=description, expected=_show_counts(graph.counts),
                           got=f"{got!r} (a {type(got).__name__})",
                           cause="graph_ops must return a collections.Counter of node type names")
        if Counter(counts) != graph.counts or any(not isinstance(k, str) for k in counts):
            failures.append((description, graph, counts, _counts_causes(graph, counts), t))
    if not failures:
        return results
    description, graph, counts, causes, t = failures[0]
    # A slip shows in every graph it touches: prefer the one cause that explains all the wrong answers.
    common = [c for c in causes if all(c in other for *_, other, _ in failures)]
    cause = (common or causes or [None])[0]
    # Called again on the very same t, a correct (or consistently wrong) walk gives the same answer.
    if _as_counts(_call_graph_ops(student, t, description)) != counts:
        cause = ("a second call on the same t gave different counts: something survives from one call to the next "
                 "(a Counter or a set of seen nodes created once, at module level or as a default argument); create "
                 "them inside graph_ops, fresh for every call")
    cause = cause or _difference(graph, counts)
    raise mismatch(what, given=description, expected=_show_counts(graph.counts), got=_show_counts(Counter(counts)),
                   cause=cause)


def _leaf(*shape: int, device: torch.device) -> torch.Tensor:
    return torch.randn(shape).to(device).requires_grad_(True)


@GRAPH_OPS.check(points=1)
def returns_counter(student: Submission, device: torch.device) -> None:
    """The result is a collections.Counter keyed by node type name."""
    a, b = _leaf(3, device=device), _leaf(3, device=device)
    t = (a * b).sum()
    got = _call_graph_ops(student, t, "t = (a * b).sum(), with a, b leaves requiring grad")
    if not isinstance(got, Counter):
        hint = " (a dict with the same counts is not enough: start from Counter() and add 1 per node)" if isinstance(
            got, dict) else ""
        fail(f"graph_ops((a * b).sum()) returned {got!r}, a {type(got).__name__}; the specification asks for a "
             f"collections.Counter{hint}")
    bad = [k for k in got if not isinstance(k, str)]
    if bad:
        fail(f"graph_ops((a * b).sum()) returned {_show_counts(got)}: the keys must be node type names (strings, "
             f"type(node).__name__), not {type(bad[0]).__name__}")


@GRAPH_OPS.check(points=1)
def small_expressions(student: Submission, device: torch.device) -> None:
    """Small expressions of leaves that require grad: every node, AccumulateGrad included, counted."""
    a, b, c = _leaf(3, device=device), _leaf(3, device=device), _leaf(3, device=device)
    w = _leaf(3, 2, device=device)
    cases = [
        ("t = (a * b).sum(), with a, b leaves requiring grad", lambda: (a * b).sum()),
        ("t = a.sin().cos().exp(), a leaf requiring grad", lambda: a.sin().cos().exp()),
        ("t = ((a * b).exp() + c * 2).mean(), with a, b, c leaves requiring grad",
         lambda: ((a * b).exp() + c * 2).mean()),
        ("t = torch.tanh(a @ w + b[:2]).sum(), with a, w, b leaves requiring grad",
         lambda: torch.tanh(a @ w + b[:2]).sum()),
        ("t = y.sum() where y = a.clone(); y[0] = (b * c).sum() (an in-place write)", lambda: _copy_slices(a, b, c)),
    ]
    _expect_counts(student, [(description, build()) for description, build in cases],
                   "wrong node counts for a small expression")


def _copy_slices(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    y = a.clone()
    y[0] = (b * c).sum()
    return y.sum()


@GRAPH_OPS.check(points=1)
def no_grad_fn_is_empty(student: Submission, device: torch.device) -> None:
    """A tensor without grad_fn (leaf, no requires_grad, no_grad, detach) gives an empty Counter."""
    a = _leaf(3, device=device)
    with torch.no_grad():
        under_no_grad = a * 2
    cases = [
        ("a leaf that requires grad (its grad_fn is None)", a),
        ("a tensor that does not require grad", torch.randn(3).to(device)),
        ("a * 2 computed under torch.no_grad()", under_no_grad),
        ("(a * 2).detach()", (a * 2).detach()),
        ("x * y with x, y not requiring grad", torch.randn(3).to(device) * torch.randn(3).to(device)),
    ]
    for description, t in cases:
        (got,) = _expect_counts(student, [(f"t = {description}", t)],
                                "a tensor with no grad_fn must give an empty Counter")
        if not isinstance(got, Counter):
            fail(f"graph_ops(t) for t = {description} returned {got!r}, a {type(got).__name__}; the specification "
                 "asks for an empty collections.Counter (likely cause: the early return for a tensor without "
                 "grad_fn returns {} or dict(); return Counter() there too)")


@GRAPH_OPS.check(points=1)
def shared_nodes_counted_once(student: Submission, device: torch.device) -> None:
    """A node reached by several paths (a diamond, a leaf used twice) counts once."""
    a, b = _leaf(4, device=device), _leaf(4, device=device)

    def diamond():
        y = a.exp()
        return (y * y.sin() + y).sum()

    def reused():
        h = a * b
        return (h + h * h).mean()

    cases = [
        ("t = a * a (one leaf used twice)", lambda: a * a),
        ("t = (y * y.sin() + y).sum() with y = a.exp() (y's node is reached by three paths)", diamond),
        ("t = (h + h * h).mean() with h = a * b", reused),
        ("t = (a * b + a.exp() * b).sum()", lambda: (a * b + a.exp() * b).sum()),
    ]
    _expect_counts(student, [(description, build()) for description, build in cases],
                   "wrong node counts for a graph with shared nodes")


@GRAPH_OPS.check(points=1)
def inputs_without_grad_skipped(student: Submission, device: torch.device) -> None:
    """Inputs that do not require grad (None entries of next_functions) are not nodes."""
    a, w = _leaf(4, device=device), _leaf(4, 2, device=device)
    c, x = torch.randn(4).to(device), torch.randn(5, 4).to(device)
    cases = [
        ("t = a * c, with c not requiring grad", lambda: a * c),
        ("t = (x @ w).relu().sum(), with the data x not requiring grad", lambda: (x @ w).relu().sum()),
        ("t = (a + c * 3).exp().sum(), with c not requiring grad", lambda: (a + c * 3).exp().sum()),
    ]
    _expect_counts(student, [(description, build()) for description, build in cases],
                   "wrong node counts for a graph with inputs that do not require grad")


@GRAPH_OPS.check(points=1)
def stops_at_detach(student: Submission, device: torch.device) -> None:
    """detach() cuts the graph; a detached tensor made to require grad is a new leaf; t may be any non-leaf."""
    a, b = _leaf(4, device=device), _leaf(4, device=device)

    def new_leaf():
        h = a.exp().detach().requires_grad_(True)
        return (h * b).sum()

    def retained():
        y = a * b
        y.retain_grad()
        return y.tanh()

    cases = [
        ("t = (a.exp().detach() * b).sum()", lambda: (a.exp().detach() * b).sum()),
        ("t = (h * b).sum() with h = a.exp().detach().requires_grad_()", new_leaf),
        ("t = a.exp() (a non-leaf in the middle of a larger computation)", lambda: a.exp()),
        ("t = y.tanh() with y = a * b and y.retain_grad()", retained),
    ]
    _expect_counts(student, [(description, build()) for description, build in cases],
                   "wrong node counts for a graph with a detach or a non-leaf")


@GRAPH_OPS.check(points=1)
def two_layer_network(student: Submission, device: torch.device) -> None:
    """The loss of a two-layer network (Linear, ReLU, Linear, cross-entropy) on a batch."""
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    x, y = torch.randn(5, 4).to(device), torch.randint(0, 3, (5,)).to(device)
    loss = F.cross_entropy(model(x), y)
    description = ("t = F.cross_entropy(model(x), y), model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), "
                   "nn.Linear(8, 3)), x of shape (5, 4)")
    _expect_counts(student, [(description, loss)], "wrong node counts for a two-layer network's loss")


@GRAPH_OPS.check(points=1)
def unrolled_rnn(student: Submission, device: torch.device) -> None:
    """An RNN unrolled 80 steps (a graph ~250 nodes deep) whose weights are shared by every step."""
    w_x, w_h, bias = _leaf(3, 4, device=device), _leaf(4, 4, device=device), _leaf(4, device=device)
    xs = torch.randn(80, 2, 3).to(device)
    h = torch.zeros(2, 4).to(device)
    for x in xs:
        h = torch.tanh(x @ w_x + h @ w_h + bias)
    _expect_counts(student, [("t = h.sum() after 80 steps of h = torch.tanh(x_t @ w_x + h @ w_h + bias)", h.sum())],
                   "wrong node counts for an unrolled RNN")


@GRAPH_OPS.check(points=1)
def residual_network(student: Submission, device: torch.device) -> None:
    """30 residual blocks x = x + relu(linear(x)): 2**30 paths but ~150 nodes, walked in well under 5 s."""
    blocks = [nn.Linear(4, 4).to(device) for _ in range(30)]
    x = torch.randn(2, 4).to(device)
    for block in blocks:
        x = x + torch.relu(block(x))
    description = ("t = x.sum() after 30 residual blocks x = x + torch.relu(linear(x)): each block doubles the "
                   "number of paths (2**30 in all), not the number of nodes")
    previous = student.timeout
    student.timeout = min(previous or _GRAPH_OPS_TIME_LIMIT_S, _GRAPH_OPS_TIME_LIMIT_S)
    try:
        _expect_counts(student, [(description, x.sum())], "wrong node counts for a residual network")
    except StudentCodeError as exc:
        if "did not finish" in str(exc):
            fail(f"graph_ops(t) did not finish within {student.timeout:g} s for {description}\n  likely cause: the "
                 "walk goes on below a node already seen, so it follows every path; check whether a node was seen "
                 "BEFORE walking its next_functions, and skip it if so")
        raise
    finally:
        student.timeout = previous


# ==================================================================================================
# grad_accumulation
# ==================================================================================================
ACCUMULATION = exercise("grad_accumulation", chapter="02_autograd", names=["train_with_accumulation"])
_NAME = "train_with_accumulation"
# 5 samples per micro-batch: a batch size that no accum_steps or number of micro-batches of the checks
# equals, so "divided by the batch size" cannot be mistaken for another slip.
_MICRO_BATCH = 5
_PARAM_TOLERANCE = dict(rtol=1e-6, atol=1e-9)


def _make_model(device: torch.device) -> nn.Module:
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2)).to(device=device, dtype=torch.float64)


def _make_micro_batches(n: int, device: torch.device) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(torch.randn(_MICRO_BATCH, 3, dtype=torch.float64).to(device),
             torch.randn(_MICRO_BATCH, 2, dtype=torch.float64).to(device)) for _ in range(n)]


def _flat_grads(params: list[torch.Tensor]) -> torch.Tensor:
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    return torch.cat([g.detach().flatten().clone() for g in grads])


@dataclasses.dataclass
class _Ordinary:
    """What ordinary training (one forward/backward per concatenated window) does, step by step."""

    losses: list[float]  # the window's mean loss, per step
    step_grads: list[torch.Tensor]  # the flattened gradient at each optimizer step
    micro_losses: list[list[float]]  # each micro-batch's loss, at the window's starting parameters
    first_window_micro_grads: list[torch.Tensor]  # each micro-batch's gradient in window 1 (diagnosis only)
    params: list[torch.Tensor]  # the parameters after training


def _ordinary_training(model: nn.Module, optimizer: torch.optim.Optimizer, micro_batches, loss_fn,
                       accum: int) -> _Ordinary:
    params = list(model.parameters())
    first_grads = []
    for x, y in micro_batches[:accum]:
        grads = torch.autograd.grad(loss_fn(model(x), y), params)
        first_grads.append(torch.cat([g.flatten() for g in grads]))
    losses, step_grads, micro_losses = [], [], []
    for start in range(0, len(micro_batches), accum):
        window = micro_batches[start:start + accum]
        with torch.no_grad():
            micro_losses.append([loss_fn(model(x), y).item() for x, y in window])
        inputs, targets = torch.cat([x for x, _ in window]), torch.cat([y for _, y in window])
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        step_grads.append(_flat_grads(params))
        optimizer.step()
        losses.append(loss.item())
    return _Ordinary(losses, step_grads, micro_losses, first_grads, [p.detach().clone() for p in params])


@dataclasses.dataclass
class _Setup:
    model: nn.Module
    optimizer: torch.optim.Optimizer
    micro_batches: list
    loss_fn: nn.Module
    accum: int
    expected: _Ordinary
    description: str
    junk: torch.Tensor | None = None


def _setup(device: torch.device, make_optimizer: Callable, optimizer_name: str, n_micro: int, accum: int,
           junk: bool = False) -> _Setup:
    """A model, its micro-batches and optimizer for the student, and ordinary training of a deep copy."""
    model = _make_model(device)
    micro_batches = _make_micro_batches(n_micro, device)
    loss_fn = nn.MSELoss()
    reference = copy.deepcopy(model)
    expected = _ordinary_training(reference, make_optimizer(reference.parameters()),
                                  [(x.clone(), y.clone()) for x, y in micro_batches], loss_fn, accum)
    junk_grads = None
    if junk:
        for p in model.parameters():
            p.grad = torch.randn(p.shape, dtype=p.dtype).to(device) * 5
        junk_grads = _flat_grads(list(model.parameters()))
    description = (f"{n_micro} micro-batches of {_MICRO_BATCH} samples, accum_steps={accum}, optimizer "
                   f"{optimizer_name}, model Linear(3, 5)-Tanh-Linear(5, 2) in float64, loss_fn nn.MSELoss()"
                   + (", and junk already in every parameter's .grad before the call" if junk else ""))
    return _Setup(model, make_optimizer(model.parameters()), micro_batches, loss_fn, accum, expected, description,
                  junk_grads)


def _run_student(student: Submission, setup: _Setup) -> tuple[object, list[torch.Tensor]]:
    """Call the student's function on the check's own objects; record the gradient at each optimizer step."""
    params = list(setup.model.parameters())
    seen: list[torch.Tensor] = []
    handle = setup.optimizer.register_step_pre_hook(lambda optimizer, args, kwargs: seen.append(_flat_grads(params)))
    try:
        got = student.run(student.get(_NAME), setup.model, setup.micro_batches, setup.loss_fn, setup.optimizer,
                          setup.accum, _label=_NAME)
    except StudentCodeError as exc:
        message = f"{_NAME} failed on {setup.description}: {exc}"
        error = exc.exception
        if isinstance(error, AttributeError) and "'NoneType' object has no attribute" in str(error):
            message += ("\n  likely cause: a parameter's .grad is None until its first backward (and again after "
                        "zero_grad(), which sets it to None by default); clear gradients with optimizer.zero_grad(), "
                        "or skip parameters whose .grad is None")
        raise StudentCodeError(message, error) from None
    finally:
        handle.remove()
    return got, seen


def _grads_close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.allclose(a, b, rtol=1e-6, atol=1e-9)


def _training_cause(setup: _Setup, seen: list[torch.Tensor]) -> str | None:
    """Name the slip from the gradients the optimizer saw at each step (recorded by a step pre-hook)."""
    expected, accum, n_micro = setup.expected, setup.accum, len(setup.micro_batches)
    windows = len(expected.step_grads)
    times = "once" if windows == 1 else f"{windows} times"
    if not seen:
        return "optimizer.step() was never called; update the parameters with the optimizer you were given"
    if len(seen) == n_micro and n_micro != windows:
        return (f"optimizer.step() was called every micro-batch ({n_micro} times); call it once per window of "
                f"accum_steps micro-batches ({times} here)")
    if len(seen) != windows:
        return (f"optimizer.step() was called {len(seen)} times; it must be called once per window of accum_steps "
                f"micro-batches ({times} here)")
    got, right = seen[0], expected.step_grads[0]
    if not _grads_close(got, right):
        if not got.abs().any():
            return ("the gradients were all zero (or None) when optimizer.step() ran: zero_grad() was called between "
                    "backward() and step(), or backward() was never called")
        first, last = expected.first_window_micro_grads[0], expected.first_window_micro_grads[-1]
        candidates = [
            (right * accum, "the loss was not divided by accum_steps: backward() ADDS the micro-batch gradients, so "
                            "their sum is accum_steps times the gradient of the window's mean loss"),
            (right / accum, "the gradient was divided by accum_steps twice (divide each micro-batch's loss once)"),
            (right * accum / n_micro, "the loss was divided by len(micro_batches) instead of accum_steps (the number "
                                      "of micro-batches per window)"),
            (right / _MICRO_BATCH, "the loss was also divided by the batch size: loss_fn already returns the mean "
                                   "over the micro-batch, so divide by accum_steps only"),
            (last / accum, "zero_grad() runs every micro-batch, so only the last micro-batch's gradient is left "
                           "when optimizer.step() runs; clear gradients once per window"),
            (last, "zero_grad() runs every micro-batch, so only the last micro-batch's gradient is left when "
                   "optimizer.step() runs (and the loss was not divided by accum_steps)"),
            (first / accum, "optimizer.step() ran after the FIRST micro-batch of the window: step when "
                            "(i + 1) % accum_steps == 0, not when i % accum_steps == 0"),
            (first, "optimizer.step() ran after the FIRST micro-batch of the window (step when (i + 1) % accum_steps "
                    "== 0), and the loss was not divided by accum_steps"),
        ]
        if setup.junk is not None:
            candidates[:0] = [
                (right + setup.junk, "zero_grad missing at the start: the .grad left over from before the call "
                                     "leaked into the first step; clear gradients before the first window"),
                (right * accum + setup.junk, "zero_grad missing at the start (old .grad leaked into the first step), "
                                             "and the loss was not divided by accum_steps"),
            ]
        for wrong, cause in candidates:
            if not _grads_close(wrong, right) and _grads_close(got, wrong):
                return cause
        return "the gradient at the first optimizer.step() is not the gradient of the first window's mean loss"
    for k in range(1, windows):
        if _grads_close(seen[k], expected.step_grads[k]):
            continue
        if _grads_close(seen[k], expected.step_grads[k] + seen[k - 1]):
            return (f"gradients are not cleared between windows: step {k + 1} also used window {k}'s gradient; "
                    "call zero_grad() before every window (or after every step), not once at the start")
        return f"the gradient at optimizer step {k + 1} is not the gradient of window {k + 1}'s mean loss"
    return ("the gradient was right at every optimizer.step(), yet the parameters differ: something else changed "
            "them (a manual update, or an optimizer other than the one passed in)")


def _expect_training(student: Submission, setup: _Setup, what: str) -> list[torch.Tensor]:
    got, seen = _run_student(student, setup)
    params = [p.detach() for p in setup.model.parameters()]
    if all(torch.allclose(p, q, **_PARAM_TOLERANCE) for p, q in zip(params, setup.expected.params)):
        return seen
    diff = max((p - q).abs().max().item() for p, q in zip(params, setup.expected.params))
    raise mismatch(what, given=setup.description,
                   expected="the parameters of ordinary training: one step per window on the concatenated window",
                   got=f"parameters that differ from those by up to {diff:.3g}", cause=_training_cause(setup, seen))


def _sgd(lr: float, momentum: float = 0.0) -> Callable:
    return lambda params: torch.optim.SGD(params, lr=lr, momentum=momentum)


@ACCUMULATION.check(points=1)
def validates_arguments(student: Submission, device: torch.device) -> None:
    """ValueError when accum_steps < 1 or the number of micro-batches is not a multiple of it."""
    for n_micro, accum, why in [(4, 0, "accum_steps is 0"), (4, -2, "accum_steps is negative"),
                                (5, 2, "5 micro-batches do not split into windows of 2"),
                                (4, 3, "4 micro-batches do not split into windows of 3")]:
        model = _make_model(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        args = (model, _make_micro_batches(n_micro, device), nn.MSELoss(), optimizer, accum)
        try:
            expect_error(student, ValueError, student.get(_NAME), args, why=why,
                         call=f"{_NAME}(model, {n_micro} micro-batches, loss_fn, optimizer, accum_steps={accum})",
                         cause="a missing check at the top of the function (before any training)")
        except CheckFailed as exc:
            message = str(exc)
            if "ZeroDivisionError" in message:
                message += ("\n  likely cause: len(micro_batches) % accum_steps divides by zero when accum_steps is 0: "
                            "check accum_steps < 1 first")
            elif "AssertionError" in message:
                message += "\n  likely cause: assert raises AssertionError; raise ValueError(...) instead"
            raise CheckFailed(message) from None


@ACCUMULATION.check(points=1)
def returns_float_list(student: Submission, device: torch.device) -> None:
    """Returns a list of Python floats, one per optimizer step (window)."""
    setup = _setup(device, _sgd(0.0), "SGD(lr=0)", n_micro=6, accum=3)
    got, _ = _run_student(student, setup)
    call = f"{_NAME}(..., {len(setup.micro_batches)} micro-batches, accum_steps={setup.accum})"
    if not isinstance(got, list):
        fail(f"{call} returned {got!r} (a {type(got).__name__}); it must return a list with the mean loss of each "
             "window (one float per optimizer step)")
    if len(got) == len(setup.micro_batches):
        fail(f"{call} returned {len(got)} losses, one per micro-batch; return one per optimizer step (window), "
             f"{len(setup.expected.losses)} here: the mean of the window's micro-batch losses")
    if len(got) != len(setup.expected.losses):
        fail(f"{call} returned {len(got)} losses; expected one per optimizer step (window): "
             f"{len(setup.expected.losses)}")
    for value in got:
        if isinstance(value, torch.Tensor):
            fail(f"{call} returned a list of tensors; return Python floats (loss.item()): a tensor that requires grad "
                 "also keeps the whole graph of its micro-batch alive")
        if not isinstance(value, float) or isinstance(value, bool):
            fail(f"{call} returned a list holding {value!r} (a {type(value).__name__}); each entry must be a float")


def _same_floats(got: list[float], expected: list[float]) -> bool:
    return len(got) == len(expected) and all(math.isclose(g, e, rel_tol=1e-6, abs_tol=1e-12)
                                             for g, e in zip(got, expected))


@ACCUMULATION.check(points=1)
def losses_are_window_means(student: Submission, device: torch.device) -> None:
    """Each returned loss is the mean of its window's micro-batch losses (measured before the window's step)."""
    setup = _setup(device, _sgd(0.0), "SGD(lr=0) (so the parameters stay put)", n_micro=6, accum=3)
    got, _ = _run_student(student, setup)
    try:
        values = [float(v) for v in got]
    except (TypeError, ValueError):
        fail(f"{_NAME} returned {got!r}; it must return a list of floats")
    expected, micro = setup.expected.losses, setup.expected.micro_losses
    if _same_floats(values, expected):
        _expect_losses_along_the_way(student, device)
        return
    candidates = [
        ([sum(m) for m in micro], "the window's losses were summed; return their mean (divide by accum_steps)"),
        ([e / setup.accum for e in expected], "the losses already divided by accum_steps were averaged again: "
                                              "keep loss.item() from before the division"),
        ([m[-1] for m in micro], "only the last micro-batch's loss of each window was kept; average all of them"),
        ([m[0] for m in micro], "only the first micro-batch's loss of each window was kept; average all of them"),
        ([x for m in micro for x in m], "one loss per micro-batch was returned; return one per window (their mean)"),
    ]
    running = [sum(sum(m) for m in micro[:k + 1]) / setup.accum for k in range(len(micro))]
    candidates.append((running, "the running total of the losses is not reset between windows: start each window's "
                                "total at 0"))
    cause = None
    for wrong, why in candidates:
        if _same_floats(values, wrong):
            cause = why
            break
    raise mismatch("the returned losses are not the windows' mean losses", given=setup.description,
                   expected=repr([round(e, 6) for e in expected]), got=repr([round(v, 6) for v in values]), cause=cause)


def _expect_losses_along_the_way(student: Submission, device: torch.device) -> None:
    """With a learning rate > 0: each loss is measured before its window's step, on the student's own trajectory.

    The expected losses are taken from the student's own model at each optimizer.step() (a step pre-hook
    evaluates the window's micro-batches just before the step, and a post-hook just after), so a gradient
    slip does not show here as well: only when the losses are measured counts.
    """
    setup = _setup(device, _sgd(0.1), "SGD(lr=0.1) (so the parameters move at every step)", n_micro=6, accum=3)
    windows = [setup.micro_batches[i:i + setup.accum] for i in range(0, len(setup.micro_batches), setup.accum)]
    before, after = [], []

    def window_loss(k: int) -> float | None:
        if k >= len(windows):
            return None
        with torch.no_grad():
            return sum(setup.loss_fn(setup.model(x), y).item() for x, y in windows[k]) / setup.accum

    pre = setup.optimizer.register_step_pre_hook(lambda *_: before.append(window_loss(len(before))))
    post = setup.optimizer.register_step_post_hook(lambda *_: after.append(window_loss(len(after))))
    try:
        got = student.run(student.get(_NAME), setup.model, setup.micro_batches, setup.loss_fn, setup.optimizer,
                          setup.accum, _label=_NAME)
    finally:
        pre.remove()
        post.remove()
    if len(before) != len(windows) or not isinstance(got, list):
        return  # a wrong number of steps, or a wrong return type, is reported by the other checks
    try:
        values = [float(v) for v in got]
    except (TypeError, ValueError):
        return
    if _same_floats(values, before):
        return
    cause = None
    if _same_floats(values, after):
        cause = ("the losses were computed after optimizer.step(), with the updated parameters; return the mean of the "
                 "losses of the forward passes that produced the window's gradient (loss.item() before the step)")
    raise mismatch("with a learning rate > 0, the returned losses are not the windows' mean losses before each step",
                   given=setup.description, expected=repr([round(e, 6) for e in before]),
                   got=repr([round(v, 6) for v in values]), cause=cause)


@ACCUMULATION.check(points=1)
def plain_sgd_matches(student: Submission, device: torch.device) -> None:
    """With plain SGD the parameters equal those of ordinary training on the concatenated windows."""
    setup = _setup(device, _sgd(0.1), "SGD(lr=0.1)", n_micro=12, accum=3)
    _expect_training(student, setup, "after training with plain SGD, the parameters are wrong")


@ACCUMULATION.check(points=1)
def momentum_sgd_matches(student: Submission, device: torch.device) -> None:
    """With SGD with momentum (optimizer state) the parameters equal those of ordinary training."""
    setup = _setup(device, _sgd(0.05, momentum=0.9), "SGD(lr=0.05, momentum=0.9)", n_micro=8, accum=2)
    _expect_training(student, setup, "after training with SGD with momentum, the parameters are wrong")


@ACCUMULATION.check(points=1)
def adam_matches(student: Submission, device: torch.device) -> None:
    """With Adam (optimizer state) the parameters equal those of ordinary training."""
    setup = _setup(device, lambda params: torch.optim.Adam(params, lr=0.01), "Adam(lr=0.01)", n_micro=8, accum=4)
    _expect_training(student, setup, "after training with Adam, the parameters are wrong")


@ACCUMULATION.check(points=1)
def leftover_grads_ignored(student: Submission, device: torch.device) -> None:
    """Gradients left in .grad before the call do not leak into the first step."""
    setup = _setup(device, _sgd(0.1), "SGD(lr=0.1)", n_micro=6, accum=2, junk=True)
    _expect_training(student, setup, "with .grad already set before the call, the parameters are wrong")


@ACCUMULATION.check(points=1)
def edge_accum_steps(student: Submission, device: torch.device) -> None:
    """accum_steps=1 is plain training; accum_steps=len(micro_batches) makes a single step."""
    for n_micro, accum, what in [(3, 1, "with accum_steps=1 (plain training, a step per micro-batch)"),
                                 (4, 4, "with accum_steps equal to the number of micro-batches (one step)")]:
        setup = _setup(device, _sgd(0.1), "SGD(lr=0.1)", n_micro=n_micro, accum=accum)
        _expect_training(student, setup, f"{what}, the parameters are wrong")
