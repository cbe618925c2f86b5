"""gelu_function: GELUFunction, a torch.autograd.Function for the tanh approximation of GELU, with an
explicit backward (the analytic derivative).

The student's class lives only in the runner: every check sends inputs to a scenario function below,
which applies ``GELUFunction``, runs backward (through the autograd engine, as training does) and sends
back observations (the output, the input as forward left it, the gradient, the torch calls it made).
Every expected value comes from PyTorch itself, in the judge: ``F.gelu(x, approximate="tanh")`` and
autograd through it, on the same inputs.

Known mistakes are named: each check compares a wrong answer with what the usual slips would give (a
wrong constant, a missing factor, a derivative missing a term of the product rule...).

Four checks also judge generated inputs (``generate_case``: any shape, dtype, layout, edge value and state of
requires_grad and grad_output the specification allows), and report the smallest failing one, shrunk with the
student's own class; a slip is named there only when it alone fits every failing input.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from typing import Any

import torch
import torch.nn.functional as F
from torch.autograd.gradcheck import GradcheckError

from graders import domain
from graders.compare import difference, dtype_name, one_torch_thread, show, show_number, type_name
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import CheckFailed, StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise, judge_only
from graders.student import Submission
from graders.watch import torch_calls

GELU = exercise("gelu_function", chapter="02_autograd", names=["GELUFunction"], warm_compiler_stack=True)  # gradcheck

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
_NO_BACKWARD = ("GELUFunction has no backward method, so no gradient can flow through it; the exercise asks for an "
                "explicit backward: a @staticmethod backward(ctx, grad_output) that returns grad_output times the "
                "derivative you worked out by hand")
# What an explicit backward never calls: asking the autograd engine to differentiate something for it.
_AUTOGRAD_CALLS = ("grad", "backward", "vjp", "jvp", "jacobian")
_CALL = "GELUFunction.apply(x)"


def _describe(t: torch.Tensor) -> str:
    layout = "" if t.is_contiguous() else f", non-contiguous (strides {tuple(t.stride())})"
    offset = f", storage offset {t.storage_offset()}" if t.storage_offset() else ""
    return f"a {dtype_name(t.dtype)} tensor of shape {tuple(t.shape)} on {t.device.type}{layout}{offset}"


# ==================================================================================================
# Expected values (judge) and the known slips
# ==================================================================================================
def _torch_gelu(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x.detach(), approximate="tanh")


def _torch_gelu_grad(x: torch.Tensor, grad_output: torch.Tensor) -> torch.Tensor:
    """d/dx of F.gelu(x, approximate="tanh") times ``grad_output``, by autograd on an independent copy."""
    leaf = x.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(F.gelu(leaf, approximate="tanh"), leaf, grad_output)
    return grad


def _torch_gelu_grad_of_view(base: torch.Tensor, view: tuple | None, grad_output: torch.Tensor) -> torch.Tensor:
    """The gradient w.r.t. ``base`` of F.gelu(x).backward(grad_output), x = base.as_strided(*view)."""
    leaf = base.detach().clone().requires_grad_(True)
    x = leaf if view is None else leaf.as_strided(*view)
    (grad,) = torch.autograd.grad(F.gelu(x, approximate="tanh"), leaf, grad_output)
    return grad


def _tanh_gelu(x, half=0.5, beta=_BETA, kappa=_KAPPA, power=3):
    return half * x * (1 + torch.tanh(beta * (x + kappa * x**power)))


def _near(dtype: torch.dtype) -> dict:
    """How close a result must be to a wrong formula's to name that slip; a wrong formula is only used
    where it is at least that far from the right one, so the two can be told apart."""
    return dict(rtol=0.04, atol=0.04) if dtype == torch.bfloat16 else dict(rtol=1e-3, atol=1e-4)


def _matches(got64: torch.Tensor, wrong: torch.Tensor, right: torch.Tensor, dtype: torch.dtype) -> bool:
    """True when the student's result is the wrong formula's: close to it where the wrong formula is clearly
    apart from the right one, or (float64) equal to it to float64 precision where the two differ there."""
    near = _near(dtype)
    if not torch.allclose(wrong, right, **near) and torch.allclose(got64, wrong, **near):
        return True
    if dtype == torch.float64:
        rtol, atol = _TOLERANCE[torch.float64]
        return (not torch.allclose(wrong, right, rtol=rtol, atol=atol)
                and torch.allclose(got64, wrong, rtol=rtol / 100, atol=atol / 100))
    return False


def _forward_cause(x: torch.Tensor, got: torch.Tensor) -> str | None:
    """Name the slip when the student's forward equals one known wrong formula (compared in float64)."""
    causes = _forward_causes(x, got)
    return causes[0] if len(causes) == 1 else None


def _forward_causes(x: torch.Tensor, got: torch.Tensor) -> list[str]:
    """The known slips whose formula gives the student's forward values (compared in float64)."""
    x64, got64 = x.detach().double().cpu(), got.detach().double().cpu()
    if not torch.isfinite(got64).all() and torch.isfinite(x64).all():
        where = x64[~torch.isfinite(got64)]
        return [f"the result is nan/inf at x = {where[0].item():g}: an intermediate overflows for large |x| (tanh "
                "written with exp: exp(2u) = inf gives inf/inf); use torch.tanh"]
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
    matches = [cause for wrong, cause in known if _matches(got64, wrong, right, x.dtype)]
    if matches:  # several slips give these values (bfloat16 is coarse): the caller names one only when it is alone
        return matches
    if x.dtype == torch.float64:
        in_float32 = _tanh_gelu(x64.float()).double()
        if torch.allclose(got64, in_float32, rtol=1e-5, atol=1e-6) and not _close(got64, right, _TOLERANCE[x.dtype]):
            return [f"the values have float32 precision only: {_FLOAT32_PRECISION}"]
    return []


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
    """Name the slip when the student's gradient equals grad_output times one known wrong derivative."""
    causes = _backward_causes(x, grad_output, got)
    return causes[0] if len(causes) == 1 else None


def _backward_causes(x: torch.Tensor, grad_output: torch.Tensor, got: torch.Tensor) -> list[str]:
    """The known slips whose gradient (grad_output times a wrong derivative) is the student's."""
    x64, g64, got64 = (t.detach().double().cpu() for t in (x, grad_output, got))
    near = _near(x.dtype)
    correct = _tanh_gelu_derivative(x64)
    bad = ~torch.isfinite(got64) & torch.isfinite(g64 * correct)
    if bad.any():
        where = x64[bad][0].item()
        return [(f"the gradient is nan/inf at x = {where:g}: "
                + ("a division by x (for instance output / x for 0.5 * (1 + tanh(u))) is 0/0 at x = 0; compute "
                   "0.5 * (1 + tanh(u)) directly" if where == 0 else
                   "an intermediate overflows for large |x| (exp of a large argument, e.g. tanh or sech written "
                   "with exp: inf/inf is nan); use torch.tanh and 1 - tanh(u)**2"))]
    if not torch.allclose(g64 * correct, correct, **near) and torch.allclose(got64, correct, **near):
        return ["backward ignores grad_output: it must return grad_output * (the derivative), the chain rule "
                "that carries the gradient of whatever comes after GELU"]
    twice = g64 * g64 * correct
    if not torch.allclose(twice, g64 * correct, **near) and torch.allclose(got64, twice, **near):
        return ["grad_output is multiplied in twice"]
    matches = [cause for derivative, cause in _derivative_variants(x64)
               if _matches(got64, g64 * derivative, g64 * correct, x.dtype)]
    if matches:
        return matches
    if (x.dtype == torch.float64 and torch.allclose(got64, g64 * correct, rtol=1e-5, atol=1e-6)
            and not _close(got64, g64 * correct, _GRAD_TOLERANCE[x.dtype])):
        return [f"the gradient has float32 precision only: in backward, {_FLOAT32_PRECISION}"]
    return []


def _gelu_values(dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A spread of inputs: a fine grid, random values, zero, and large magnitudes where naive code overflows."""
    grid = torch.linspace(-6, 6, 61, dtype=torch.float64)
    extremes = torch.tensor([0.0, -0.0, 1e-4, -1e-4, 9.0, -9.0, 12.0, -12.0, 30.0, -30.0], dtype=torch.float64)
    values = torch.cat([grid, torch.randn(40, dtype=torch.float64) * 2.5, extremes])
    return values.to(dtype).to(device)


# ==================================================================================================
# The generated domain (from the specification's sentences): a tensor of any shape (0-d, empty, one element,
# up to 4-D, up to two thousand elements), dtype (float32, float64, bfloat16) and layout (contiguous, transposed,
# sliced with a step, with a storage offset, permuted, expanded with stride 0), values from tiny to huge (zero,
# -0.0, subnormal, |x| up to 1e5), that
# requires grad or not, and any grad_output (random, zeros, large, non-contiguous).
# ==================================================================================================
_GEN_DTYPES = (torch.float32, torch.float64, torch.bfloat16)
# Not past 1e5: from |x| ~ 7e12 a float32 x**3 is inf, and the natural ways of writing the derivative (0.5 * x * du
# first) are then inf * 0 = nan; the spec asks for the formula, not for an order of its terms that survives there
# (F.gelu's own float32 backward is nan from 1e19). Up to 30 (the hand-written values), exp-based tanh must hold.
_EDGES = (0.0, -0.0, 1e-30, -1e-30, 1e-40, 1e-4, -1e-4, 30.0, -30.0, 1e3, -1e3, 1e5, -1e5)


@dataclasses.dataclass(frozen=True)
class GenCase:
    """x = base.as_strided(*view) (or base itself), base of ``base_shape`` filled from ``seed``."""

    dtype: str
    base_shape: tuple[int, ...]
    view: tuple | None  # (shape, stride, offset) into base, or None
    layout: str  # how the view was made, for the message
    scale: float
    edges: tuple[float, ...]  # values written into the first elements of base
    requires_grad: bool
    grad: str  # "random", "zeros", "transposed" (non-contiguous), "expanded" (one value, stride 0), "none"
    seed: int

    @property
    def numel(self) -> int:
        return math.prod(self.view[0]) if self.view is not None else math.prod(self.base_shape)

    def size(self) -> tuple:
        return (self.numel, len(self.edges), self.grad != "random", self.view is not None, self.scale != 1.0,
                _GEN_DTYPES.index(getattr(torch, self.dtype)))


def _case_tensors(case: GenCase, device: torch.device) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(base, grad_output) of a generated case (in the judge, from its seed)."""
    generator = torch.Generator().manual_seed(case.seed)
    dtype = getattr(torch, case.dtype)
    base = torch.randn(case.base_shape, generator=generator, dtype=torch.float64) * case.scale
    flat = base.view(-1)
    for k, value in enumerate(case.edges[:flat.numel()]):
        flat[k] = value
    shape = case.view[0] if case.view is not None else case.base_shape
    grad_output = None
    if case.grad != "none":
        if case.grad == "transposed" and len(shape) >= 2:
            grad_output = torch.randn(tuple(reversed(shape)), generator=generator, dtype=torch.float64)
            grad_output = grad_output.permute(*reversed(range(len(shape))))  # a non-contiguous grad_output
        elif case.grad == "expanded":
            # what y.sum() (times a constant) hands backward: one value expanded to y's shape, every stride 0,
            # so a backward that writes into grad_output in place (grad_output.mul_) raises
            grad_output = torch.randn((), generator=generator, dtype=torch.float64).expand(shape)
        else:
            grad_output = torch.randn(shape, generator=generator, dtype=torch.float64)
            grad_output = grad_output * (0.0 if case.grad == "zeros" else 1.0)
        grad_output = grad_output.to(dtype).to(device)
    return base.to(dtype).to(device), grad_output


_LAYOUTS = ("contiguous", "transposed", "sliced", "offset", "permuted", "expanded")


def _layout(generator, shape: tuple[int, ...], layout: str) -> tuple[tuple[int, ...], tuple | None]:
    """(base shape, view of it) giving x of ``shape`` with that layout."""
    n = len(shape)
    if layout == "contiguous" or n == 0:
        return shape, None
    if layout == "transposed" and n >= 2:
        base = shape[:-2] + (shape[-1], shape[-2])
        strides = torch.empty(base).stride()
        return base, (shape, strides[:-2] + (strides[-1], strides[-2]), 0)
    if layout == "permuted" and n >= 2:  # x = base.permute(order)
        order = list(range(n))
        generator.shuffle(order)
        inverse = _inverse(order)
        base = tuple(shape[inverse[k]] for k in range(n))
        strides = torch.empty(base).stride()
        return base, (shape, tuple(strides[order[d]] for d in range(n)), 0)
    if layout == "expanded":
        base = tuple(1 if generator.random() < 0.5 else s for s in shape)
        strides = torch.empty(base).stride()
        return base, (shape, tuple(0 if b == 1 and s != 1 else st for b, s, st in zip(base, shape, strides)), 0)
    step = domain.pick(generator, [2, 3])
    offset = domain.small_int(generator, 1, 5) if layout == "offset" else 0
    base = (shape[0] * step + offset,) + shape[1:] if shape[0] else (offset + 1,) + shape[1:]
    strides = torch.empty(base).stride()
    return base, (shape, (strides[0] * step,) + strides[1:], offset * strides[0])


def _inverse(order: list[int]) -> list[int]:
    inverse = [0] * len(order)
    for position, k in enumerate(order):
        inverse[k] = position
    return inverse


def generate_case(generator, *, dtypes: tuple = _GEN_DTYPES, layouts: tuple = _LAYOUTS,
                  grads: bool | None = None) -> GenCase:
    """An input from the whole domain (``grads``: True always a gradient, False never, None either)."""
    dims = domain.small_int(generator, 0, 4)
    shape = tuple(domain.small_int(generator, 0, 5, edge=0.15) for _ in range(dims))
    layout = domain.pick(generator, layouts)
    dtype = domain.pick(generator, dtypes)
    # a few thousand elements (not a bfloat16 x expanded that much: its gradient sums hundreds of bfloat16 values)
    if dims and generator.random() < 0.05 and not (dtype == torch.bfloat16 and layout == "expanded"):
        shape = (generator.randint(100, 400),) + shape[1:2]
        shape = tuple(max(1, s) for s in shape)
    base_shape, view = _layout(generator, shape, layout)
    requires_grad = grads if grads is not None else generator.random() < 0.8
    if grads is False:
        requires_grad = generator.random() < 0.3  # forward only: requires grad or not, no backward asked
    edges = tuple(generator.sample(_EDGES, domain.small_int(generator, 0, 6))) if generator.random() < 0.5 else ()
    grad = "none"
    if grads is not False and requires_grad:
        # (no grad_output far from 1: the gradient tolerances are at the scale of a derivative, and a correct
        # derivative's rounding times 1000 is beyond them where GELU' crosses 0, at x = -0.75)
        grad = domain.pick(generator, ["random", "random", "zeros", "transposed", "expanded"])
    return GenCase(str(dtype).removeprefix("torch."), base_shape, view,
                   layout if view is not None else "contiguous",
                   domain.pick(generator, [1.0, 1e-3, 0.5, 3.0, 10.0, 40.0]), edges, requires_grad, grad,
                   generator.getrandbits(32))


def smaller_cases(case: GenCase) -> list[GenCase]:
    """Fewer edge values, a contiguous layout, a random grad_output, a smaller scale (shape: as drawn)."""
    out = [dataclasses.replace(case, edges=case.edges[:k]) for k in range(len(case.edges))]
    out += [dataclasses.replace(case, edges=(value,)) for value in case.edges if len(case.edges) > 1]
    if case.view is not None:
        out.append(dataclasses.replace(case, view=None, base_shape=case.view[0], layout="contiguous"))
    if case.grad not in ("random", "none"):
        out.append(dataclasses.replace(case, grad="random"))
    if case.scale != 1.0:
        out.append(dataclasses.replace(case, scale=1.0))
    return out


def _gen_describe(case: GenCase, x: torch.Tensor) -> str:
    layout = {"contiguous": "", "transposed": ", a transposed view", "sliced": ", a view sliced with a step",
              "offset": ", a sliced view with a storage offset", "permuted": ", a permuted view",
              "expanded": ", an expanded view (stride 0)"}[case.layout]
    edges = f", holding {', '.join(f'{v:g}' for v in case.edges[:x.numel()])}" if case.edges and x.numel() else ""
    grad = {"none": "", "random": ", and a random grad_output", "zeros": ", and grad_output = zeros",
            "transposed": ", and a non-contiguous grad_output",
            "expanded": ", and grad_output = one random value expanded to x's shape (stride 0), as y.sum() gives"
            }[case.grad]
    rg = " that requires grad" if case.requires_grad else " with requires_grad=False"
    return f"x = {_describe(x)}{layout}, values randn * {case.scale:g}{edges}{rg}{grad}"


# ==================================================================================================
# Scenarios: they run in the student's process and return observations (never compare)
# ==================================================================================================
def _student_class(student: RunnerStudent) -> type:
    cls = student.get("GELUFunction")
    if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)):
        fail(f"GELUFunction is a {type(cls).__name__}; it must be a class that subclasses torch.autograd.Function "
             "(with static forward and backward methods), used as GELUFunction.apply(x)")
    return cls


def _has_backward(cls: type) -> bool:
    """backward (or its alias vjp) is the student's own, not torch.autograd.Function's, which raises."""
    base = torch.autograd.Function
    return getattr(cls, "backward", None) is not base.backward or getattr(cls, "vjp", None) is not base.vjp


def _raised(exc: StudentRaised, stage: str) -> dict:
    return {"stage": stage, "raised": dataclasses.asdict(exc.error)}


def _forward_and_backward(student: RunnerStudent, cls: type, leaf: torch.Tensor, x: torch.Tensor,
                          grad_output: torch.Tensor | None) -> dict:
    """Apply GELUFunction to x; then, when grad_output is given, d(out)/d(leaf) through the autograd engine."""
    obs: dict[str, Any] = {"has_backward": _has_backward(cls)}
    try:
        out = student.run(cls.apply, x)
    except StudentRaised as exc:
        return {**obs, **_raised(exc, "forward")}
    obs["out"] = out
    obs["x_after"] = x.detach().clone()
    # (wire.tensor_facts cannot be asked about a tensor of several elements: it compares them with ==)
    obs["node"] = type(out.grad_fn).__name__ if isinstance(out, torch.Tensor) and out.grad_fn is not None else None
    if (grad_output is None or not obs["has_backward"] or not isinstance(out, torch.Tensor)
            or out.grad_fn is None or out.shape != x.shape):
        return obs  # the judge fails on the forward's observations first
    # (the engine hands backward this very tensor, as it hands one gradient to every consumer of a value)
    grad_output_before = grad_output.clone()
    try:
        (grad,) = student.run(torch.autograd.grad, out, leaf, grad_output, allow_unused=True)
    except StudentRaised as exc:
        obs.update(_raised(exc, "backward"))
        if 0 in grad_output.stride() and grad_output.numel() > 1:
            obs["contiguous_retry"] = _retry_contiguous(student, cls, leaf, x, grad_output)
        return obs
    obs["grad"] = grad
    obs["grad_output_changed"] = not torch.equal(grad_output, grad_output_before)
    obs["ran_backward"] = True
    return obs


def _retry_contiguous(student: RunnerStudent, cls: type, leaf: torch.Tensor, x: torch.Tensor,
                      grad_output: torch.Tensor) -> dict:
    """After backward raised for a grad_output with stride 0: the same values in a contiguous tensor."""
    contiguous = grad_output.contiguous()
    before = contiguous.clone()
    try:
        out = student.run(cls.apply, x)
        student.run(torch.autograd.grad, out, leaf, contiguous, allow_unused=True)
    except StudentRaised:
        return {"raised": True}
    return {"raised": False, "grad_output_changed": not torch.equal(contiguous, before)}


def _run_gelu(student: RunnerStudent, base: torch.Tensor, view: tuple | None, requires_grad: bool,
              grad_output: torch.Tensor | None) -> dict:
    """x = base (a leaf), or the view base.as_strided(*view) of it; GELUFunction.apply(x), then backward."""
    cls = _student_class(student)
    leaf = base.detach().requires_grad_(requires_grad)
    x = leaf if view is None else leaf.as_strided(*view)
    return _forward_and_backward(student, cls, leaf, x, grad_output)


def _run_cases(student: RunnerStudent, cases: list) -> list[dict]:
    """_run_gelu for each (base, view, requires_grad, grad_output), in order, up to the first that raises."""
    observations = []
    for base, view, requires_grad, grad_output in cases:
        observations.append(_run_gelu(student, base, view, requires_grad, grad_output))
        if "raised" in observations[-1]:
            break
    return observations


def _run_generated(student: RunnerStudent, cases: list, max_raised: int = 40) -> list[dict]:
    """_run_gelu for each (base, view, requires_grad, grad_output), every one observed (after ``max_raised``
    raises the rest are left out)."""
    observations = []
    raised = 0
    for base, view, requires_grad, grad_output in cases:
        if raised >= max_raised:
            observations.append({"skipped": True})
            continue
        observations.append(_run_gelu(student, base, view, requires_grad, grad_output))
        raised += "raised" in observations[-1]
    return observations


def _run_gradcheck(student: RunnerStudent, x: torch.Tensor, grad_output: torch.Tensor) -> dict:
    """One forward and backward on x, then torch.autograd.gradcheck(GELUFunction.apply, (x,))."""
    cls = _student_class(student)
    leaf = x.detach().clone().requires_grad_(True)
    obs: dict[str, Any] = {"has_backward": _has_backward(cls),
                           "run": _forward_and_backward(student, cls, leaf, leaf, grad_output)}
    if not obs["has_backward"] or "raised" in obs["run"]:
        return obs
    checked = x.detach().requires_grad_(True)  # x's own layout (strides, storage offset) came across
    try:
        student.run(torch.autograd.gradcheck, cls.apply, (checked,), eps=1e-6, atol=1e-5, rtol=1e-3)
        obs["gradcheck"] = "passed"
    except StudentRaised as exc:
        if not exc.error.is_instance(GradcheckError):
            return {**obs, **_raised(exc, "gradcheck")}
        obs["gradcheck"] = "failed"
        obs["report"] = exc.error.exception_message
    return obs


def _run_gradchecks(student: RunnerStudent, inputs: list) -> list[dict]:
    """_run_gradcheck for each (x, grad_output), in order, up to the first that raises."""
    observations = []
    for x, grad_output in inputs:
        observations.append(_run_gradcheck(student, x, grad_output))
        if "raised" in observations[-1] or "raised" in observations[-1]["run"]:
            break
    return observations


def _run_two_calls(student: RunnerStudent, a: torch.Tensor, b: torch.Tensor, grad_a: torch.Tensor,
                   grad_b: torch.Tensor) -> dict:
    """out_a = GELUFunction.apply(a), out_b = GELUFunction.apply(b), then one backward through both."""
    cls = _student_class(student)
    a, b = a.detach().requires_grad_(True), b.detach().requires_grad_(True)
    obs: dict[str, Any] = {"has_backward": _has_backward(cls)}
    try:
        out_a = student.run(cls.apply, a)
        out_b = student.run(cls.apply, b)
    except StudentRaised as exc:
        return {**obs, **_raised(exc, "forward")}
    obs.update(out_a=out_a, out_b=out_b, a_after=a.detach().clone(), b_after=b.detach().clone())
    outs = (out_a, out_b)
    if not obs["has_backward"] or not all(isinstance(o, torch.Tensor) and o.grad_fn is not None and
                                          o.shape == a.shape for o in outs):
        return obs
    try:
        grads = student.run(torch.autograd.grad, outs, (a, b), (grad_a, grad_b), allow_unused=True)
    except StudentRaised as exc:
        return {**obs, **_raised(exc, "backward")}
    obs["grads"] = list(grads)
    return obs


def _run_inplace_change(student: RunnerStudent, x0: torch.Tensor, grad_output: torch.Tensor) -> dict:
    """A plain forward and backward first; then x = leaf * 1, out = apply(x), x.mul_(2), backward."""
    cls = _student_class(student)
    plain_leaf = x0.detach().clone().requires_grad_(True)
    obs: dict[str, Any] = {"plain": _forward_and_backward(student, cls, plain_leaf, plain_leaf, grad_output)}
    if not obs["plain"].get("ran_backward"):
        return obs
    leaf = x0.detach().clone().requires_grad_(True)
    x = leaf * 1.0  # a non-leaf: it may be changed in place
    try:
        out = student.run(cls.apply, x)
    except StudentRaised as exc:
        return {**obs, **_raised(exc, "forward")}
    with torch.no_grad():
        x.mul_(2.0)
    try:
        (grad,) = student.run(torch.autograd.grad, out, leaf, grad_output, allow_unused=True)
    except StudentRaised as exc:
        return {**obs, **_raised(exc, "backward")}
    obs["grad"] = grad
    return obs


def _run_watched(student: RunnerStudent, x: torch.Tensor, grad_output: torch.Tensor) -> dict:
    """The torch calls of forward, then of backward (run by calling the node: the engine hides it from a watch)."""
    cls = _student_class(student)
    x = x.detach().requires_grad_(True)
    obs: dict[str, Any] = {"has_backward": _has_backward(cls)}
    with torch_calls() as calls:
        try:
            out = student.run(cls.apply, x)
        except StudentRaised as exc:
            return {**obs, **_raised(exc, "forward")}
    obs.update(out=out, x_after=x.detach().clone(), forward_calls=list(calls.names))
    if not isinstance(out, torch.Tensor):
        return obs
    node = out.grad_fn
    obs["node"] = None if node is None else type(node).__name__
    # For a custom Function the node is the ctx, and node.apply runs GELUFunction.backward with it.
    obs["own_node"] = node is not None and getattr(node, "_forward_cls", None) is cls
    if not (obs["own_node"] and obs["has_backward"]):
        return obs
    with torch_calls() as calls:
        try:
            result = student.run(node.apply, grad_output)
        except StudentRaised as exc:
            return {**obs, **_raised(exc, "backward"), "backward_calls": list(calls.names)}
    obs.update(backward_result=result, backward_calls=list(calls.names))
    return obs


# ==================================================================================================
# Judging the observations
# ==================================================================================================
def _scenario(student: Submission, call: str, function, *args) -> Any:
    try:
        obs = student.scenario(function, *args)
    except StudentCodeError as exc:
        raise exc.within(call) from None
    if not isinstance(obs, (dict, list)):  # the grader's own scenarios return a dict, or a list of them
        raise TypeError(f"scenario {function.__name__} returned {type(obs).__name__}")
    return obs


def _raise_student_error(obs: dict, stage: str, call: str) -> None:
    """Re-raise, in the judge, what the student's code raised at ``stage`` (as its facts came back)."""
    if obs.get("stage") == stage and isinstance(obs.get("raised"), dict):
        raise StudentCodeError(StudentError(**obs["raised"])).within(call)


def _expect_output(obs: dict, x: torch.Tensor, what: str, given: str) -> torch.Tensor:
    """The forward's result: a tensor with x's shape, device and dtype, and x left as it was."""
    _raise_student_error(obs, "forward", f"{_CALL} with x = {_describe(x)}")
    out = obs.get("out")
    if isinstance(out, tuple) and len(out) == 1 and isinstance(out[0], torch.Tensor):
        fail(f"{_CALL} returned a tuple holding one tensor for x = {_describe(x)}; forward must return the "
             "tensor itself")
    if not isinstance(out, torch.Tensor):
        fail_mismatch(f"{_CALL} must return a tensor", given=given, expected="a tensor (GELU of x)",
                      got=f"{show(out)} (a {type_name(out)})",
                      cause="forward ends without `return` (it returns None)" if out is None else None)
    if tuple(out.shape) != tuple(x.shape):
        fail_mismatch(what, given=given, expected=f"shape {tuple(x.shape)} (GELU acts elementwise)",
                      got=f"shape {tuple(out.shape)}", cause="the output must have the input's shape")
    if out.device != x.device:
        fail_mismatch(what, given=given, expected=f"a result on {x.device.type}", got=f"a result on {out.device.type}",
                      cause="a tensor made on the cpu (e.g. torch.tensor(...) for a constant); use Python floats "
                            "or create it on x.device")
    if out.dtype != x.dtype:
        fail_mismatch(what, given=given, expected=f"dtype {dtype_name(x.dtype)}", got=f"dtype {dtype_name(out.dtype)}",
                      cause="the result must keep x's dtype: something promoted it (a float64 constant tensor, a "
                            ".double() or .float() cast); convert back with .to(x.dtype) or use Python floats as "
                            "constants")
    after = obs.get("x_after")
    if isinstance(after, torch.Tensor) and not torch.equal(after, x.detach()):
        fail(f"{what}\n  input: {given}\n  GELUFunction.apply changed its input x in place (x.mul_, x **= ..., "
             "x += ..., or u = x; u *= ...); compute into new tensors and leave x as it was")
    return out


def _worst(values_at: torch.Tensor, expected: torch.Tensor, got: torch.Tensor,
           tolerance: tuple) -> tuple[str, str, str]:
    """(input value, expected, returned) at the element where they disagree most (compare.difference's pick)."""
    rtol, atol = tolerance
    a, b = (t.detach().to("cpu", torch.float64).reshape(-1) for t in (got, expected))
    bad = ~torch.isclose(a, b, rtol=rtol, atol=atol)
    error = torch.where(bad, (a - b).abs().nan_to_num(nan=math.inf, posinf=math.inf), torch.zeros_like(a))
    i = int(error.argmax())
    at = values_at.detach().to("cpu", torch.float64).reshape(-1)[i].item()
    return show_number(at), show_number(b[i].item()), show_number(a[i].item())


def _close(got: torch.Tensor, expected: torch.Tensor, tolerance: tuple[float, float]) -> bool:
    rtol, atol = tolerance
    return torch.allclose(got.detach().double().cpu(), expected.detach().double().cpu(), rtol=rtol, atol=atol)


_OWN = object()  # the cause is computed from this case alone


def _expect_values(out: torch.Tensor, x: torch.Tensor, what: str, given: str, cause: Any = _OWN) -> None:
    expected = _torch_gelu(x)
    tolerance = _TOLERANCE[x.dtype]
    if not _close(out, expected, tolerance):
        at, want, have = _worst(x, expected, out, tolerance)
        fail_mismatch(what, given=f"{given}; worst at x = {at}", expected=f"{want}  (F.gelu(x, approximate=\"tanh\"))",
                      got=have, where=difference(out, expected, rtol=tolerance[0], atol=tolerance[1]),
                      cause=_forward_cause(x, out) if cause is _OWN else cause)


def _expect_grad(obs: dict, x: torch.Tensor, base: torch.Tensor, grad_output: torch.Tensor, expected: torch.Tensor,
                 what: str, given: str, cause: Any = _OWN) -> None:
    """The gradient w.r.t. ``base`` (x itself, or the tensor x is a view of) that came back from backward."""
    if not obs.get("has_backward"):
        fail(_NO_BACKWARD)
    out = obs.get("out")
    if isinstance(out, torch.Tensor) and obs.get("node") is None:
        fail(f"the output of {_CALL} has no grad_fn although x requires grad, so no gradient can flow back "
             f"(x = {given})\n  likely cause: forward's result was marked non-differentiable "
             "(ctx.mark_non_differentiable), or GELUFunction.apply was replaced by a function that detaches it")
    retry = obs.get("contiguous_retry")
    if obs.get("stage") == "backward" and isinstance(retry, dict) and retry.get("raised") is False:
        error = StudentError(**obs["raised"]).describe()
        lines = [f"backward through {_CALL} raised for a grad_output with stride 0\n  input: {given}\n  backward raised for this grad_output, whose elements all share one "
                 f"memory location (stride 0, what y.sum() hands backward), and not for the same values in a "
                 f"contiguous tensor:\n    {error}"]
        if retry.get("grad_output_changed"):
            lines.append("  likely cause: backward writes into grad_output in place (it changed a contiguous "
                         "grad_output too, e.g. grad_output.mul_(...)): return a new tensor, grad_output * "
                         "derivative")
        else:
            lines.append("  backward must work for a grad_output of any layout (no .view() on it, no writes into it)")
        fail("\n".join(lines))
    _raise_student_error(obs, "backward", f"backward through {_CALL} ({'' if given.startswith('x = ') else 'x = '}"
                                          f"{given})")
    grad = obs.get("grad")
    if not obs.get("ran_backward"):
        raise TypeError("backward did not run although the forward's observations passed")
    if obs.get("grad_output_changed"):
        fail(f"backward through {_CALL} changed grad_output in place\n  input: {given}\n  its values after backward differ "
             "from those handed in. Autograd hands one gradient tensor to every use of a value (in GELU(x) + x the "
             "same tensor reaches both terms), so writing into it corrupts the other gradients; return a new "
             "tensor, grad_output * derivative")
    if grad is None:
        fail(f"{what}\n  input: {given}\n  backward returned None for x, so x gets no gradient at all\n  likely cause: "
             "backward must return grad_output * (the derivative of GELU at x), one tensor per input of forward")
    if not isinstance(grad, torch.Tensor) or tuple(grad.shape) != tuple(base.shape):
        shape = tuple(grad.shape) if isinstance(grad, torch.Tensor) else type_name(grad)
        fail_mismatch(what, given=given, expected=f"a gradient of shape {tuple(base.shape)}", got=f"{shape}",
                      cause="backward must return one gradient with the input's shape: grad_output * derivative")
    tolerance = _GRAD_TOLERANCE[base.dtype]
    if not _close(grad, expected, tolerance):
        at, want, have = _worst(base, expected, grad, tolerance)
        if cause is _OWN:
            cause = _backward_cause(x, grad_output, grad) if base is x else None  # (w.r.t. a view's base: no cause)
        fail_mismatch(what, given=f"{given}; worst at {'x' if base is x else 'the base element'} = {at}",
                      expected=f"{want}  (autograd through F.gelu(x, approximate=\"tanh\"))", got=have,
                      where=difference(grad, expected, rtol=tolerance[0], atol=tolerance[1]), cause=cause)


@dataclasses.dataclass
class _Case:
    """One application: x = base, or the view base.as_strided(*view); the gradient is taken w.r.t. base."""

    base: torch.Tensor
    what: str  # the headline when forward is wrong
    given: str  # the input, as the student reads it
    grad_output: torch.Tensor | None = None  # None: forward only
    what_grad: str = ""  # the headline when the gradient is wrong
    view: tuple | None = None
    requires_grad: bool = True
    values: bool = True  # compare forward's values too (else only its type, shape, dtype and device)

    @property
    def x(self) -> torch.Tensor:
        return self.base if self.view is None else self.base.as_strided(*self.view)


def _expect_cases(student: Submission, cases: list[_Case]) -> None:
    """Run every case in one scenario, then judge them in order: forward, then the gradient."""
    expected_grads = [None if c.grad_output is None else _torch_gelu_grad_of_view(c.base, c.view, c.grad_output)
                      for c in cases]
    sent = [(c.base.detach().clone(), c.view, c.requires_grad, c.grad_output) for c in cases]
    observations = _scenario(student, f"{_CALL} on {len(cases)} inputs", _run_cases, sent)
    if not isinstance(observations, list) or not observations or len(observations) > len(cases):
        raise TypeError("the scenario sent back the wrong number of observations")
    for case, expected_grad, obs in zip(cases, expected_grads, observations):
        x = case.x
        out = _expect_output(obs, x, case.what, case.given)
        if case.values:
            _expect_values(out, x, case.what, case.given)
        if case.grad_output is not None:
            given = case.given + ("; the gradient is taken w.r.t. base" if case.view is not None else "")
            if not case.grad_output.is_contiguous() and 0 not in case.grad_output.stride():
                given += ", with a non-contiguous grad_output"
            _expect_grad(obs, x, case.base, case.grad_output, expected_grad, case.what_grad, given)
    if len(observations) < len(cases):
        raise TypeError("the scenario stopped early although no case raised")


def _view_of(x: torch.Tensor) -> tuple:
    return tuple(x.shape), tuple(x.stride()), x.storage_offset()


# ==================================================================================================
# Generated inputs, judged together
# ==================================================================================================
@judge_only
def _gen_expected(case: GenCase, device: torch.device) -> dict:
    base, grad_output = _case_tensors(case, device)
    x = base if case.view is None else base.as_strided(*case.view)
    expected_grad = None if grad_output is None else _torch_gelu_grad_of_view(base, case.view, grad_output)
    return {"base": base, "x": x, "grad_output": grad_output, "expected_grad": expected_grad}


@judge_only
def _gen_judge(case: GenCase, e: dict, obs: dict, what: str, causes: tuple = (None, None)) -> None:
    """The checks of one generated case, in order (forward's result, its values, the gradient)."""
    if obs.get("skipped"):
        fail(f"{what}: GELUFunction raised on too many generated inputs")
    given = _gen_describe(case, e["x"])
    out = _expect_output(obs, e["x"], what, given)
    _expect_values(out, e["x"], what, given, cause=causes[0])
    if e["grad_output"] is not None:
        _expect_grad(obs, e["x"], e["base"], e["grad_output"], e["expected_grad"],
                     f"{what}: the gradient is wrong", given, cause=causes[1])


@judge_only
def _gen_fails(case: GenCase, e: dict, obs: dict) -> bool:
    try:
        _gen_judge(case, e, obs, "")
    except (CheckFailed, StudentCodeError):
        return True
    return False


@judge_only
def _gen_causes(case: GenCase, e: dict, obs: dict) -> tuple[list[str] | None, list[str] | None]:
    """(forward causes, backward causes) that fit this failing case: None where that part is right (no
    evidence either way), [] where it is wrong and no catalogued slip fits."""
    x, out = e["x"], obs.get("out")
    if "raised" in obs or not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(x.shape):
        return [], []
    forward = None if _close(out, _torch_gelu(x), _TOLERANCE[x.dtype]) else _forward_causes(x, out)
    grad = obs.get("grad")
    if e["grad_output"] is None or forward is not None:
        return forward, None
    if not isinstance(grad, torch.Tensor) or grad.shape != e["base"].shape:
        return forward, []
    if _close(grad, e["expected_grad"], _GRAD_TOLERANCE[x.dtype]):
        return forward, None
    # (a view's gradient is w.r.t. its base, which the slips' formulas do not give: no evidence either way)
    return forward, (_backward_causes(x, e["grad_output"], grad) if case.view is None else None)


def _cause_key(cause: str) -> str:
    """A cause without the input value it names (the same slip names another x in another case)."""
    return re.sub(r"at x = [^:]*:", "at x = ...:", cause)


def _common(lists: list) -> str | None:
    """The one cause in every list that is not None (a part that was wrong), as the first list words it."""
    lists = [c for c in lists if c is not None]
    if not lists:
        return None
    keys = [{_cause_key(c) for c in causes} for causes in lists]
    common = [c for c in lists[0] if all(_cause_key(c) in other for other in keys)]
    return common[0] if len(common) == 1 else None


@judge_only
def _expect_generated(student: Submission, device: torch.device, count: int, what: str, **options) -> None:
    """``count`` generated inputs (one scenario call); on a failure, the smallest failing input (shrunk with the
    student's own class), with a likely cause only when one catalogued slip fits every failing input."""
    cases = domain.draw(lambda g: generate_case(g, **options), count, size=GenCase.size)
    expected = {case: _gen_expected(case, device) for case in cases}

    def observe(batch: list[GenCase]) -> list[dict]:
        observations = []
        for start in range(0, len(batch), 20):  # 20 a request: a slow but correct answer stays within its time limit
            chunk = batch[start:start + 20]
            sent = [(expected[c]["base"].detach().clone(), c.view, c.requires_grad, expected[c]["grad_output"])
                    for c in chunk]
            seen = _scenario(student, f"{_CALL} on {len(chunk)} generated inputs", _run_generated, sent)
            if not isinstance(seen, list) or len(seen) != len(chunk):
                raise TypeError("the scenario sent back the wrong number of observations")
            observations.extend(seen)
        return observations

    seen = dict(zip(cases, observe(cases)))
    failing = [_gen_fails(c, expected[c], seen[c]) for c in cases]
    if not any(failing):
        return
    tried, wrong = len(cases), sum(failing)
    case = domain.smallest(cases, failing, size=GenCase.size)

    def fails(candidates: list[GenCase]) -> list[bool]:
        expected.update({c: _gen_expected(c, device) for c in candidates})
        seen.update(zip(candidates, observe(candidates)))
        return [_gen_fails(c, expected[c], seen[c]) for c in candidates]

    case = domain.shrink(case, smaller_cases, fails)
    bad = [case] + [c for c in seen if c != case and not seen[c].get("skipped") and _gen_fails(c, expected[c], seen[c])]
    evidence = [_gen_causes(c, expected[c], seen[c]) for c in bad]
    causes = (_common([f for f, _ in evidence]), _common([b for _, b in evidence]))
    _gen_judge(case, expected[case], seen[case],
               f"{what} ({wrong} of the {tried} generated inputs tried failed; the smallest one)", causes)
    raise TypeError("a generated case failed, then passed when judged again")


# ==================================================================================================
# Checks
# ==================================================================================================
def _one_thread(check):
    """The judge's own tensor work is tiny: one intra-op thread (a thread pool costs more than it saves)."""

    @functools.wraps(check)
    def run(student: Submission, device: torch.device) -> None:
        with one_torch_thread():
            check(student, device)

    return run


@GELU.check(points=1)
@_one_thread
def forward_matches_torch(student: Submission, device: torch.device) -> None:
    """Values equal F.gelu(x, approximate="tanh") in float32 and float64, with x's shape and dtype."""
    cases = []
    for dtype in (torch.float32, torch.float64):
        x = _gelu_values(dtype, device).reshape(-1, 3)
        cases.append(_Case(x, f"GELUFunction.apply(x) differs from F.gelu(x, approximate=\"tanh\") in "
                              f"{dtype_name(dtype)}", _describe(x) + " with values in [-30, 30]"))
    _expect_cases(student, cases)
    _expect_generated(student, device, 60, "GELUFunction.apply(x) differs from F.gelu(x, approximate=\"tanh\") on "
                      "a generated input", grads=False)


@GELU.check(points=1)
@_one_thread
def backward_matches_torch(student: Submission, device: torch.device) -> None:
    """backward returns grad_output * d/dx GELU(x), as autograd through F.gelu does (float32, float64)."""
    cases = []
    for dtype in (torch.float32, torch.float64):
        x = _gelu_values(dtype, device).reshape(-1, 3)
        grad_output = (torch.randn(x.shape, dtype=torch.float64) * 2).to(dtype).to(device)
        cases.append(_Case(
            x, f"GELUFunction.apply(x) is wrong in {dtype_name(dtype)}",
            f"{_describe(x)} with values in [-30, 30], and a random grad_output (not all ones)", grad_output,
            f"the gradient of GELUFunction differs from autograd's through F.gelu in {dtype_name(dtype)}",
            values=False))
    # what (c * y).sum().backward() hands backward: one value expanded, every stride 0 (it cannot be written into)
    x = _gelu_values(torch.float32, device).reshape(-1, 3)
    cases.append(_Case(
        x, "GELUFunction.apply(x) is wrong in float32",
        f"{_describe(x)} with values in [-30, 30], and grad_output = torch.tensor(1.5).expand(x.shape), as "
        "(1.5 * y).sum() gives", torch.tensor(1.5).to(device).expand(x.shape),
        "the gradient of GELUFunction is wrong for the grad_output that a sum hands backward", values=False))
    _expect_cases(student, cases)
    _expect_generated(student, device, 60, "GELUFunction is wrong on a generated input", grads=True)


def _gradcheck_report(report: str, limit: int = 24) -> str:
    lines = report.strip().splitlines()
    shown = lines[:limit] + (["..."] if len(lines) > limit else [])
    return "\n".join("    | " + line for line in shown)


@GELU.check(points=1)
@_one_thread
def gradcheck_float64(student: Submission, device: torch.device) -> None:
    """torch.autograd.gradcheck(GELUFunction.apply, (x,)) passes for float64 x (contiguous and not), and the
    function it checks is GELU."""
    inputs = [
        torch.randn(4, dtype=torch.float64).mul(2).to(device),
        torch.randn(2, 3, dtype=torch.float64).mul(2).to(device).t(),
        torch.randn(8, dtype=torch.float64).mul(2).to(device)[1::3],
    ]
    # A grad_output that is not all ones, so a backward that ignores it shows.
    sent = [(x, torch.linspace(-1.5, 2.0, x.numel(), dtype=x.dtype).reshape(x.shape).to(device)) for x in inputs]
    observations = _scenario(student, "torch.autograd.gradcheck(GELUFunction.apply, (x,))", _run_gradchecks, sent)
    if not isinstance(observations, list) or not observations or len(observations) > len(sent):
        raise TypeError("the gradcheck scenario sent back the wrong number of observations")
    for (x, grad_output), obs in zip(sent, observations):
        call = f"torch.autograd.gradcheck(GELUFunction.apply, (x,)) with x = {_describe(x)}"
        run = obs.get("run")
        if not isinstance(run, dict):
            raise TypeError("the gradcheck scenario sent no forward observations")
        given = f"{_describe(x)}, the input of gradcheck"
        what = f"{_CALL} is wrong"
        out = _expect_output(run, x, what, given)
        if not obs.get("has_backward"):
            fail(_NO_BACKWARD)
        _raise_student_error(run, "backward", f"backward through {_CALL} (x = {given})")
        _raise_student_error(obs, "gradcheck", call)
        if obs.get("gradcheck") == "failed":
            lines = [f"{call} failed; its report (numerical = finite differences of your forward, analytical = "
                     "your backward):", _gradcheck_report(str(obs.get("report", "")))]
            cause = _gradcheck_cause(run, x, grad_output)
            if cause:
                lines.append(f"  likely cause: {cause}")
            fail("\n".join(lines))
        if obs.get("gradcheck") != "passed":
            raise TypeError("gradcheck neither passed nor failed")
        what = "gradcheck passed (backward agrees with forward), but GELUFunction.apply(x) is not F.gelu(x)"
        _expect_values(out, x, what, given)
        _expect_grad(run, x, x, grad_output, _torch_gelu_grad(x, grad_output),
                     "gradcheck passed, but the gradient of GELUFunction is not autograd's through F.gelu",
                     given + ", and a grad_output that is not all ones")


def _gradcheck_cause(run: dict, x: torch.Tensor, grad_output: torch.Tensor) -> str | None:
    """After a failed gradcheck: is it the backward formula, or a forward that lost float64 precision?"""
    if "raised" in run or not isinstance(run.get("out"), torch.Tensor):
        return None
    out, grad = run["out"], run.get("grad")
    if run.get("ran_backward") and grad is None:
        return "backward returned None, so x gets no gradient (gradcheck's analytical Jacobian is all zeros)"
    if isinstance(grad, torch.Tensor) and grad.shape == x.shape and not _close(
            grad, _torch_gelu_grad(x, grad_output), _GRAD_TOLERANCE[torch.float64]):
        return (_backward_cause(x, grad_output, grad)
                or "backward does not return the derivative of what forward computes")
    if out.dtype == torch.float64 and out.shape == x.shape and not _close(out, _torch_gelu(x),
                                                                          _TOLERANCE[torch.float64]):
        return _forward_cause(x, out) or "forward's values differ from F.gelu's"
    return None


@GELU.check(points=1)
@_one_thread
def bfloat16(student: Submission, device: torch.device) -> None:
    """bfloat16 input (contiguous and not): bfloat16 output and gradient, close to F.gelu's (loose tolerance)."""
    values = _gelu_values(torch.float64, device)
    x = values[values.abs() <= 12].to(torch.bfloat16)
    what = "GELUFunction.apply(x) is wrong for a bfloat16 x (compared loosely, within 4% or 0.04, with F.gelu)"
    what_grad = "the gradient of GELUFunction is wrong for a bfloat16 x (compared loosely, within 4% or 0.04)"
    base = (torch.randn(6, 10) * 3).to(torch.bfloat16).to(device)
    view = _view_of(base[1:, ::2].t())
    _expect_cases(student, [
        _Case(x, what, _describe(x) + " with values in [-12, 12], and a random bfloat16 grad_output",
              torch.randn(x.shape).to(torch.bfloat16).to(device), what_grad),
        _Case(base, what, f"x = base[1:, ::2].t(): {_describe(base.as_strided(*view))}, and a random bfloat16 "
                          "grad_output", torch.randn(view[0]).to(torch.bfloat16).to(device), what_grad, view=view),
    ])
    _expect_generated(student, device, 30, "GELUFunction is wrong on a generated bfloat16 input",
                      dtypes=(torch.bfloat16,))


@GELU.check(points=1)
@_one_thread
def any_shape_and_layout(student: Submission, device: torch.device) -> None:
    """0-d, empty, one-element, 4-D, large, transposed, sliced, offset, permuted and expanded (stride 0)
    inputs, in float32 and float64, and an input that does not require grad: right values and gradients."""
    layouts = [
        ("a 0-d tensor", (), torch.float32, None),
        ("an empty tensor", (0, 3), torch.float32, None),
        ("a one-element tensor", (1,), torch.float64, None),
        ("a 4-D tensor", (2, 3, 2, 2), torch.float32, None),
        ("a large tensor", (257, 130), torch.float32, None),
        ("a transposed view x = base.t()", (4, 3), torch.float32, lambda b: b.t()),
        ("a sliced view x = base[:, ::2]", (3, 6), torch.float32, lambda b: b[:, ::2]),
        ("a view with a storage offset x = base[1:, 2::2]", (4, 7), torch.float64, lambda b: b[1:, 2::2]),
        ("a permuted view x = base.permute(2, 0, 1)", (2, 3, 4), torch.float64, lambda b: b.permute(2, 0, 1)),
        ("an expanded view x = base.expand(4, 5)", (1, 5), torch.float32, lambda b: b.expand(4, 5)),
    ]
    cases = []
    for name, shape, dtype, make_view in layouts:
        base = (torch.randn(shape, dtype=dtype) * 3).to(device)
        view = None if make_view is None else _view_of(make_view(base))
        x = base if view is None else base.as_strided(*view)
        # 2-D cases get a non-contiguous grad_output too (a backward that calls .view() on it would break)
        if x.dim() == 2:
            grad_output = torch.randn(x.shape[1], x.shape[0], dtype=dtype).to(device).t()
        else:
            grad_output = torch.randn(x.shape, dtype=dtype).to(device)
        cases.append(_Case(base, f"GELUFunction.apply is wrong for {name}", f"{name}: {_describe(x)}", grad_output,
                           f"the gradient of GELUFunction is wrong for {name}", view=view))
    plain = (torch.randn(3, 4) * 2).to(device)
    cases.append(_Case(plain, "GELUFunction.apply is wrong for an input that does not require grad",
                       _describe(plain) + " with requires_grad=False", requires_grad=False))
    _expect_cases(student, cases)
    _expect_generated(student, device, 40, "GELUFunction is wrong on a generated input of an odd layout",
                      layouts=_LAYOUTS[1:])


@GELU.check(points=1)
@_one_thread
def two_calls_in_one_graph(student: Submission, device: torch.device) -> None:
    """Two applications in one graph each keep their own saved input (state lives on ctx)."""
    a = torch.linspace(-3, 3, 7, dtype=torch.float64).to(device)
    b = (torch.randn(7, dtype=torch.float64) * 2).to(device)
    ga, gb = torch.randn(7, dtype=torch.float64).to(device), torch.randn(7, dtype=torch.float64).to(device)
    expected_a, expected_b = _torch_gelu_grad(a, ga), _torch_gelu_grad(b, gb)
    call = "out_a = GELUFunction.apply(a), out_b = GELUFunction.apply(b), then one backward through both"
    given = ("out_a = GELUFunction.apply(a), out_b = GELUFunction.apply(b) (two float64 tensors of shape (7,)), "
             "then one backward through both")
    obs = _scenario(student, call, _run_two_calls, a, b, ga, gb)
    _raise_student_error(obs, "forward", call)
    for name, x in (("a", a), ("b", b)):
        what = f"with two GELUFunction.apply calls in one graph, out_{name} is wrong"
        out = _expect_output({"out": obs.get(f"out_{name}"), "x_after": obs.get(f"{name}_after")}, x, what, given)
        _expect_values(out, x, what, given)
    if not obs.get("has_backward"):
        fail(_NO_BACKWARD)
    _raise_student_error(obs, "backward", f"backward through both ({call})")
    grads = obs.get("grads")
    if not isinstance(grads, list) or len(grads) != 2:
        fail(f"the outputs of {_CALL} have no grad_fn although a and b require grad, so no gradient can flow back")
    for name, other, leaf, g, expected, got in [("a", b, a, ga, expected_a, grads[0]),
                                                ("b", a, b, gb, expected_b, grads[1])]:
        what = "with two GELUFunction.apply calls in one graph, a gradient is wrong"
        if got is None:
            fail(f"{what}\n  input: {given}\n  backward returned None for {name}, so {name} gets no gradient")
        if not isinstance(got, torch.Tensor) or got.shape != leaf.shape:
            raise TypeError("the autograd engine returned a gradient of the wrong shape")
        tolerance = _GRAD_TOLERANCE[torch.float64]
        if _close(got, expected, tolerance):
            continue
        cause = _backward_cause(leaf, g, got)
        if _close(got, _torch_gelu_grad(other, g), tolerance):
            cause = ("the two calls share their saved input: the gradient for the first call was computed at the "
                     "second call's x; save tensors on ctx (ctx.save_for_backward(x)), never on the class, a global "
                     "or a closure, because every call gets its own ctx")
        at, want, have = _worst(leaf, expected, got, tolerance)
        fail_mismatch(what, given=f"{given}; gradient for {name}, worst at {name} = {at}", expected=want, got=have,
                      where=difference(got, expected, rtol=tolerance[0], atol=tolerance[1]), cause=cause)


@GELU.check(points=1)
@_one_thread
def saves_input_for_backward(student: Submission, device: torch.device) -> None:
    """Right gradients, and changing x in place after forward makes backward raise autograd's version-counter
    error (x is saved with ctx.save_for_backward)."""
    x0 = (torch.randn(6) * 2).to(device)
    grad_output = torch.randn(6).to(device)
    call = "x = leaf * 1; out = GELUFunction.apply(x); x.mul_(2) in place; backward through out"
    obs = _scenario(student, call, _run_inplace_change, x0, grad_output)
    plain = obs.get("plain")
    if not isinstance(plain, dict):
        raise TypeError("the in-place scenario sent no plain run")
    given = f"{_describe(x0)} that requires grad, and a random grad_output"
    out = _expect_output(plain, x0, f"{_CALL} is wrong", given)
    _expect_values(out, x0, f"{_CALL} is wrong", given)
    _expect_grad(plain, x0, x0, grad_output, _torch_gelu_grad(x0, grad_output),
                 "the gradient of GELUFunction is wrong (before any in-place change)", given)
    _raise_student_error(obs, "forward", call)
    error = obs.get("raised") if obs.get("stage") == "backward" else None
    if isinstance(error, dict):
        facts = StudentError(**error)
        if facts.is_instance(RuntimeError) and "modified by an inplace operation" in facts.exception_message:
            return  # autograd noticed the change: x was saved with ctx.save_for_backward
        raise StudentCodeError(facts).within(call)
    got = obs.get("grad")
    changed = x0 * 2.0
    at_new, at_old = _torch_gelu_grad(changed, grad_output), _torch_gelu_grad(x0, grad_output)
    cause = ("backward must get x from ctx.saved_tensors after ctx.save_for_backward(x) in forward; autograd then "
             "checks that x was not changed since forward")
    tolerance = _GRAD_TOLERANCE[torch.float32]
    if isinstance(got, torch.Tensor) and _close(got, at_new, tolerance) and not _close(got, at_old, tolerance):
        cause = ("x was kept as an attribute (ctx.x = x, or a global) instead of ctx.save_for_backward(x), or "
                 "saved as x.data (which escapes autograd's version tracking), so backward silently used the "
                 "CHANGED values: a wrong gradient and no error")
    elif isinstance(got, torch.Tensor) and _close(got, at_old, tolerance):
        cause = ("backward used its own copy (a clone, or intermediate results) instead of x saved with "
                 "ctx.save_for_backward(x), so the in-place change of x went unnoticed")
    fail(f"{call} did not raise autograd's error \"one of the variables needed for gradient computation has been "
         f"modified by an inplace operation\" (x = {given})\n  likely cause: {cause}")


def _gelu_names(names: list) -> list[str]:
    return [n for n in names if isinstance(n, str) and "gelu" in n.lower()]


@GELU.check(points=1)
@_one_thread
def computes_formula_itself(student: Submission, device: torch.device) -> None:
    """forward and backward compute the formula: no F.gelu, nn.GELU or torch.ops.aten.gelu, and an explicit
    backward (GELUFunction's own node, which never asks autograd to differentiate for it)."""
    x = (torch.randn(5, dtype=torch.float64) * 2).to(device)
    grad_output = torch.randn(5, dtype=torch.float64).to(device)
    rule = ("the exercise is to compute the formula yourself: GELUFunction must not call torch.nn.functional.gelu, "
            "nn.GELU or autograd through them")
    given = f"{_describe(x)} that requires grad"
    obs = _scenario(student, f"{_CALL} with x = {_describe(x)}", _run_watched, x, grad_output)
    _raise_student_error(obs, "forward", f"{_CALL} with x = {_describe(x)}")
    called = _gelu_names(obs.get("forward_calls", []))
    if called:
        fail(f"forward called torch's gelu ({', '.join(dict.fromkeys(called))}); {rule}")
    explicit = ("the exercise asks for an explicit backward that computes grad_output * (the derivative you worked "
                "out by hand) with ordinary tensor operations")
    delegated = [n for n in obs.get("forward_calls", []) if n in _AUTOGRAD_CALLS]
    if delegated:
        fail(f"forward asks autograd for the derivative (it called {', '.join(dict.fromkeys(delegated))}: "
             f"torch.autograd.grad, .backward() or torch.func) for backward to use; {explicit}")
    out = _expect_output(obs, x, f"{_CALL} is wrong", given)
    _expect_values(out, x, f"{_CALL} is wrong", given)
    if not obs.get("own_node"):
        node = obs.get("node")
        if node is None:
            fail(f"the output of {_CALL} has no grad_fn although x requires grad, so no gradient can flow back")
        fail(f"the output of {_CALL} has grad_fn {node}, not GELUFunction's own backward node: autograd "
             "differentiates the operations of your formula, and GELUFunction.backward never runs\n  likely cause: "
             "GELUFunction.apply was replaced (a staticmethod apply that computes the formula); the exercise asks "
             "for an explicit backward, so define forward and backward and call the inherited GELUFunction.apply")
    if not obs.get("has_backward"):
        fail(_NO_BACKWARD)
    _raise_student_error(obs, "backward", f"GELUFunction.backward (called as out.grad_fn.apply(grad_output)) "
                                          f"for x = {given}")
    called = _gelu_names(obs.get("backward_calls", []))
    if called:
        fail(f"backward called torch's gelu ({', '.join(dict.fromkeys(called))}); {rule}")
    delegated = [n for n in obs.get("backward_calls", []) if n in _AUTOGRAD_CALLS]
    if delegated:
        fail(f"backward asks autograd for the derivative (it called {', '.join(dict.fromkeys(delegated))}: "
             f"torch.autograd.grad, .backward() or torch.func); {explicit}")
    result = obs.get("backward_result")
    if isinstance(result, tuple) and len(result) == 1:
        result = result[0]
    what = "GELUFunction.backward(ctx, grad_output) returned a wrong gradient"
    given_grad = f"{given}, and a random grad_output"
    if result is None:
        fail(f"{what}\n  input: {given_grad}\n  backward returned None, so x gets no gradient\n  likely cause: "
             "backward must return grad_output * (the derivative of GELU at x)")
    expected = _torch_gelu_grad(x, grad_output)
    if not isinstance(result, torch.Tensor) or tuple(result.shape) != tuple(x.shape):
        got = (f"shape {tuple(result.shape)}" if isinstance(result, torch.Tensor)
               else f"{show(result)} (a {type_name(result)})")
        fail_mismatch(what, given=given_grad, expected=f"a tensor of shape {tuple(x.shape)}", got=got,
                      cause="backward must return one gradient with the input's shape: grad_output * derivative")
    tolerance = _GRAD_TOLERANCE[x.dtype]
    if not _close(result, expected, tolerance):
        at, want, have = _worst(x, expected, result, tolerance)
        fail_mismatch(what, given=f"{given_grad}; worst at x = {at}",
                      expected=f"{want}  (autograd through F.gelu(x, approximate=\"tanh\"))", got=have,
                      where=difference(result, expected, rtol=tolerance[0], atol=tolerance[1]),
                      cause=_backward_cause(x, grad_output, result))
