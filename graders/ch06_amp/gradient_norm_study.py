"""The gradient norm study: total_grad_norm, init_weights_ and grad_norm_study.

Gradients exist only on live tensors, so every check builds its tensors, models and data inside the
runner from what the judge sends (values, gradients, which tensors are frozen, how they are passed) and
returns observations: the student's result as the student returned it, the gradients afterwards, every
parameter of a model, the models ``make_model`` built. The judge computes what the specification asks
from the same values with PyTorch's own ``get_total_norm``, ``nn.init`` and a training loop of its own,
then compares. A watch in the runner sees ``get_total_norm`` / ``clip_grad_norm_`` running under the
student's ``total_grad_norm`` however they were imported, since it looks for their code on the stack.
"""

from __future__ import annotations

import itertools
import math
import random
import sys
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

from graders import domain
from graders.ch03_modules.glu import Live, Seen, observe, observing
from graders.compare import close_number, difference, dtype_name, one_torch_thread, show, show_number
from graders.outcomes import CheckFailed, fail, fail_mismatch
from graders.registry import exercise, judge_only
from graders.student import Submission, expect_error

GRADIENT_NORM_STUDY = exercise("gradient_norm_study", chapter="06_amp",
                               names=["total_grad_norm", "init_weights_", "grad_norm_study"],
                               warm_compiler_stack=True)

SCHEMES = ("xavier_uniform", "kaiming_normal", "ones")
NORM_RTOL = 1e-5  # the specification's allowance against get_total_norm
# The study trains with the same operations in the same order as the judge (one thread each), so the
# parameters agree to rounding; the recorded norms may differ by the allowance above.
STUDY_RTOL = 1e-5
STUDY_ATOL = 1e-7


# ==================================================================================================
# Inside the runner
# ==================================================================================================
def _forbidden_codes() -> dict[Any, str]:
    from torch.nn.utils import clip_grad

    codes = {}
    for name, label in [("_get_total_norm", "torch.nn.utils.get_total_norm"),
                        ("clip_grad_norm_", "torch.nn.utils.clip_grad_norm_"),
                        ("clip_grad_norm", "torch.nn.utils.clip_grad_norm")]:
        function = getattr(clip_grad, name, None)
        # The innermost function's code: decorators' wrappers share one code object among many functions.
        while getattr(function, "__wrapped__", None) is not None:
            function = function.__wrapped__
        code = getattr(function, "__code__", None)
        if code is not None:
            codes[code] = label
    return codes


class _NormHelpersWatch(TorchFunctionMode):
    """Notes each torch call made from inside get_total_norm or clip_grad_norm_ (found by their code on the
    stack, so an alias or a `from ... import` does not hide them)."""

    def __init__(self) -> None:
        super().__init__()
        self.codes = _forbidden_codes()
        self.used: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        frame = sys._getframe(1)
        while frame is not None:
            label = self.codes.get(frame.f_code)
            if label is not None:
                if label not in self.used:
                    self.used.append(label)
                break
            frame = frame.f_back
        return func(*args, **(kwargs or {}))


def _result_facts(value: Any) -> dict[str, Any]:
    """What the student returned: its type, and its value when it is a number."""
    facts: dict[str, Any] = {"type": type(value).__name__, "is_float": isinstance(value, float)}
    if isinstance(value, torch.Tensor):
        facts["tensor"] = value.detach().to("cpu", torch.float64).clone() if value.numel() == 1 else None
        facts["shape"] = list(value.shape)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        facts["value"] = float(value)
    return facts


def laid_out(grad: torch.Tensor, layout: str) -> torch.Tensor:
    """``grad``'s values in the memory layout named: contiguous, transposed, a view at a storage offset, or every
    other element of a larger tensor (strided)."""
    if layout == "transposed" and grad.dim() >= 2:
        return grad.transpose(0, 1).contiguous().transpose(0, 1)
    if layout == "offset":
        storage = torch.full((grad.numel() + 3,), 7.0, dtype=grad.dtype, device=grad.device)
        storage[3:] = grad.reshape(-1)
        return storage[3:].view(grad.shape)
    if layout == "strided":
        wide = torch.full((*grad.shape, 2), 7.0, dtype=grad.dtype, device=grad.device)
        wide[..., 0] = grad
        return wide[..., 0]
    return grad.clone()


def _leaves(case: dict[str, Any], device: str) -> list[torch.Tensor]:
    leaves = []
    layouts = case.get("layouts") or ["contiguous"] * len(case["grads"])
    for value, grad, requires_grad, layout in zip(case["values"], case["grads"], case["requires_grad"], layouts):
        leaf = value.clone().to(device).requires_grad_(requires_grad)
        if grad is not None:
            leaf.grad = laid_out(grad.to(device), layout)
        leaves.append(leaf)
    return leaves


def _passed_as(leaves: list[torch.Tensor], form: str) -> Any:
    if form == "tensor":
        return leaves[0]
    if form == "tuple":
        return tuple(leaves)
    if form == "generator":
        return (leaf for leaf in leaves)
    if form == "module.parameters()":
        holder = nn.Module()
        holder.weights = nn.ParameterList([nn.Parameter(leaf.detach(), requires_grad=leaf.requires_grad)
                                           for leaf in leaves])
        for parameter, leaf in zip(holder.weights, leaves):
            parameter.grad = leaf.grad
        return holder.parameters()
    if form == "dict.values()":
        return {f"p{i}": leaf for i, leaf in enumerate(leaves)}.values()
    return list(leaves)


@observing
def _norms(live: Live, cases: list[dict[str, Any]], device: str) -> None:
    total_grad_norm = live.student.get("total_grad_norm")
    for i, case in enumerate(cases):
        leaves = _leaves(case, device)
        grads_before = [leaf.grad for leaf in leaves]
        parameters = _passed_as(leaves, case["form"])
        args = (parameters,) if case["norm_type"] is None else (parameters, case["norm_type"])
        watch = _NormHelpersWatch()
        try:
            with watch:
                result = live.run(case["label"], total_grad_norm, *args)
        finally:
            live.seen[f"{i}.helpers"] = watch.used
        live.seen[f"{i}.result"] = _result_facts(result)
        grads_after = [leaf.grad for leaf in leaves]
        live.seen[f"{i}.grads_replaced"] = [a is not b for a, b in zip(grads_after, grads_before)]
        # Copies go to the judge, which compares them with the gradients it sent (never compare here: the
        # student's code shares this process and could patch the comparison).
        live.seen[f"{i}.grads_after"] = [g.detach().to("cpu").clone() if isinstance(g, torch.Tensor) else None
                                         for g in grads_after]


# ==================================================================================================
# total_grad_norm, in the judge
# ==================================================================================================
def _case(grads: Sequence[torch.Tensor | None], *, form: str = "list", norm_type: Any = None,
          requires_grad: Sequence[bool] | None = None, values: Sequence[torch.Tensor] | None = None,
          layouts: Sequence[str] | None = None) -> dict[str, Any]:
    if values is None:
        values = [torch.randn(g.shape, dtype=torch.float64).to(g.dtype) if g is not None else torch.randn(3)
                  for g in grads]
    requires_grad = list(requires_grad) if requires_grad is not None else [True] * len(grads)
    layouts = list(layouts) if layouts is not None else ["contiguous"] * len(grads)
    pieces = []
    for value, grad, needs, layout in zip(values, grads, requires_grad, layouts):
        grad_text = "no grad" if grad is None else f"grad {tuple(grad.shape)} {dtype_name(grad.dtype)}"
        if grad is not None and layout != "contiguous":
            grad_text += {"transposed": " non-contiguous (transposed)", "offset": " at a storage offset",
                          "strided": " non-contiguous (every other element)"}[layout]
        if grad is not None and 0 < grad.numel() <= 6:
            grad_text += " " + show(grad.reshape(-1))
        pieces.append(f"({grad_text}{'' if needs else ', requires_grad=False'})")
    shown = {"tensor": "a single tensor {}", "tuple": "a tuple of {}", "generator": "a generator over {}",
             "module.parameters()": "module.parameters() over {}", "dict.values()": "dict.values() of {}"
             }.get(form, "a list of {}").format(", ".join(pieces) if pieces else "no tensors")
    label = f"total_grad_norm({shown}" + ("" if norm_type is None else f", norm_type={norm_type!r}") + ")"
    return {"values": list(values), "grads": list(grads), "requires_grad": requires_grad, "form": form,
            "norm_type": norm_type, "label": label, "layouts": layouts}


@judge_only
def _expected_norm(case: dict[str, Any]) -> float:
    grads = [g.clone() for g in case["grads"] if g is not None]
    norm_type = 2.0 if case["norm_type"] is None else case["norm_type"]
    if not grads:
        return 0.0
    return float(torch.nn.utils.get_total_norm(grads, norm_type).item())


@judge_only
def _norm_of(tensors: list[torch.Tensor], p: float) -> float:
    if not tensors:
        return 0.0
    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(t.double(), p) for t in tensors]), p))


# get_total_norm over float16 gradients accumulates in float32 but rounds its result to float16: 2**-11 relative,
# where the same norm computed in float64 is exact; twice that is allowed.
_LOW_PRECISION_RTOL = {torch.float16: 2 * 2.0**-11}


def _case_rtol(case: dict[str, Any]) -> float:
    """The relative tolerance of a case's norm: the specification's 1e-5, or its lowest-precision gradient's."""
    return max([NORM_RTOL] + [_LOW_PRECISION_RTOL.get(g.dtype, 0.0) for g in case["grads"] if g is not None])


def _close_number(got: float, expected: float, rtol: float = NORM_RTOL) -> bool:
    return close_number(got, expected, rtol=rtol, atol=1e-30)


def _norm_cause(case: dict[str, Any], got: float, expected: float) -> str | None:
    """Name a known wrong norm when ``got`` equals it (and the right one does not)."""
    grads = [g for g in case["grads"] if g is not None]
    p = 2.0 if case["norm_type"] is None else float(case["norm_type"])
    values = [v for v, g in zip(case["values"], case["grads"]) if g is not None]
    candidates = [
        (_norm_of(values, p), "this is the norm of the parameters themselves; take the norm of p.grad"),
        (_norm_of(case["values"], p), "this is the norm of the parameters themselves; take the norm of p.grad"),
        (sum(_norm_of([g], p) for g in grads), "the per-tensor norms were added; combine them with the same norm "
                                              "(the norm of the vector of norms), as if all gradients were one vector"),
        (_norm_of(grads, 2.0), f"norm_type={case['norm_type']!r} was ignored: this is the 2-norm"),
        (_norm_of(grads, 2.0) ** 2, "the square root is missing: this is the sum of squares"),
        (sum(float(g.double().abs().sum()) for g in grads), "for norm_type=inf the norm is the largest |gradient| "
                                                            "(max of abs), not the sum of |gradient|")
        if math.isinf(p) else (math.nan, ""),
        (sum(float(g.double().pow(2).sum()) for g in grads) ** (1 / p) if p != 2 else math.nan,
         "the entries were squared whatever norm_type: |g| ** p, summed, then ** (1 / p)"),
        (float(torch.cat([g.double().reshape(-1) for g in grads]).mean()) if grads else math.nan,
         "this is the mean of the gradients, not a norm"),
    ]
    rtol = _case_rtol(case)
    for wrong, cause in candidates:
        if cause and _close_number(got, wrong, rtol) and not _close_number(wrong, expected, rtol):
            return cause
    if math.isnan(expected) and not math.isnan(got):
        return ("the NaN was lost: a NaN gradient must make the norm NaN (Python's max() ignores a NaN that is not "
                "first; nan_to_num or keeping only finite values drops it)")
    if case["form"] == "generator":
        # What is left of a generator that an earlier loop over it (any(), all(), len(list(...))) has used up.
        rests = [[g for g in case["grads"][k:] if g is not None] for k in range(1, len(case["grads"]) + 1)]
        if any(_close_number(got, _norm_of(rest, p), rtol) for rest in rests) and not _close_number(got, expected,
                                                                                                    rtol):
            return ("the generator was (partly) used up before the norm was computed: a generator can be walked only "
                    "once, so take list(parameters) first and use that list")
    if got == 0.0 and expected != 0.0 and case["form"] == "tensor":
        return ("a single tensor was iterated over (its rows have no .grad): treat a tensor as [parameters]")
    return None


def _judge_norm(seen: Any, i: int, case: dict[str, Any]) -> None:
    helpers = seen[f"{i}.helpers"]
    if helpers:
        fail(f"{case['label']} called {' and '.join(helpers)}; total_grad_norm must compute the norm itself\n"
             "  likely cause: the exercise is to write what get_total_norm does (clip_grad_norm_ computes the "
             "same norm, and also rescales the gradients)")
    facts = seen[f"{i}.result"]
    expected = _expected_norm(case)
    if not facts["is_float"]:
        cause = None
        if facts["type"] == "Tensor":
            cause = "return a Python float: call .item() on the 0-dim tensor"
        elif facts["type"] == "int" and expected == 0.0:
            cause = "no gradients gives 0.0, a float (return 0.0, not 0)"
        fail_mismatch("total_grad_norm must return a Python float", given=case["label"],
                      expected=f"the float {show_number(expected)}", got=f"a value of type {facts['type']}"
                      + (f" ({show_number(facts['value'])})" if "value" in facts else ""), cause=cause)
    got = facts["value"]
    if not _close_number(got, expected, _case_rtol(case)):
        fail_mismatch("total_grad_norm is not the norm of all gradients together", given=case["label"],
                      expected=f"{show_number(expected)} (get_total_norm over the gradients, within a relative "
                               f"{_case_rtol(case):g})", got=show_number(got), cause=_norm_cause(case, got, expected))


def _judge_norms(student: Submission, cases: list[dict[str, Any]], device: torch.device) -> Any:
    seen = observe(student, _norms, cases, str(device))
    for i, case in enumerate(cases):
        _judge_norm(seen, i, case)
    return seen


def _grads(*shapes: tuple[int, ...], dtype: torch.dtype = torch.float32, scale: float = 1.0) -> list[torch.Tensor]:
    return [(torch.randn(shape, dtype=torch.float64) * scale).to(dtype) for shape in shapes]


@GRADIENT_NORM_STUDY.check(points=2)
def total_grad_norm_values(student: Submission, device: torch.device) -> None:
    """total_grad_norm equals get_total_norm over the gradients for norm types 2, 1, 3.5, inf (float or int)."""
    cases = [_case(_grads((3, 4), (5,), (2, 2, 2))),
             _case(_grads((4, 3), (7,)), norm_type=1.0),
             _case(_grads((6,), (2, 5), (1,)), norm_type=3.5),
             _case(_grads((3, 3), (4,), scale=10.0), norm_type=float("inf")),
             _case(_grads((8, 2), (3,), dtype=torch.float64), norm_type=2),
             _case([_grads((5, 3))[0].t(), _grads((4,))[0]], norm_type=1),
             _case(_grads((2, 3)) + _grads((3,), dtype=torch.float64), norm_type=2.0),
             _case(_grads((), (9, 1)), norm_type=float("inf")),
             _case([torch.zeros(4, 2)]),
             _case(_grads((1000,), scale=1e-3), norm_type=1.5)]
    _judge_norms(student, cases, device)


@GRADIENT_NORM_STUDY.check(points=1)
def total_grad_norm_parameters_forms(student: Submission, device: torch.device) -> None:
    """Any tensor or iterable works (a generator too); tensors with no .grad are skipped; no gradients gives 0.0."""
    g = _grads((3, 2), (4,), (2, 2))
    cases = [_case(g[:1], form="tensor"),
             _case(g, form="generator", norm_type=1.0),
             _case(g[:2], form="tuple"),
             _case([g[0], None, g[1], None], form="module.parameters()", requires_grad=[True, False, True, True]),
             _case([None, g[2], None], form="dict.values()", norm_type=float("inf")),
             _case([g[1], None], form="generator", norm_type=3.5, requires_grad=[True, True]),
             # A frozen tensor that still holds a gradient: its .grad is not None, so it counts.
             _case([g[0], g[2]], requires_grad=[False, True]),
             _case([], form="list"), _case([], form="generator"),
             _case([None, None], form="generator", requires_grad=[True, False]),
             _case([None], form="tensor")]
    _judge_norms(student, cases, device)


@GRADIENT_NORM_STUDY.check(points=1)
def total_grad_norm_nonfinite(student: Submission, device: torch.device) -> None:
    """A NaN gradient gives NaN, an inf one inf (for every norm type), without raising."""
    nan, inf = float("nan"), float("inf")
    with_nan = torch.tensor([1.0, nan, -2.0])
    with_inf = torch.tensor([[0.5, -inf], [1.0, 2.0]])
    cases = [_case([with_nan, *_grads((3,))]),
             _case([*_grads((2, 2)), with_inf]),
             _case([with_inf], norm_type=1.0),
             _case([with_inf, *_grads((4,))], norm_type=float("inf")),
             _case([with_nan], norm_type=float("inf")),
             _case([*_grads((3,), (2, 2)), with_nan], norm_type=float("inf")),
             _case([with_nan, with_inf], norm_type=3.5),
             _case(_grads((2, 3)))]
    _judge_norms(student, cases, device)


@GRADIENT_NORM_STUDY.check(points=1)
def total_grad_norm_leaves_gradients(student: Submission, device: torch.device) -> None:
    """Every .grad is the same tensor with the same values afterwards (no clipping, no in-place scaling)."""
    big = _grads((6, 4), (4,), scale=5.0)
    cases = [_case(big), _case(big, norm_type=1.0, form="generator"),
             _case([big[0], None, big[1]], norm_type=float("inf"), form="tuple"),
             _case([torch.tensor([3.0, float("nan")]), big[1]])]
    seen = _judge_norms(student, cases, device)  # first: the norms are right (doing nothing changes nothing)
    for i, case in enumerate(cases):
        replaced = [j for j, r in enumerate(seen[f"{i}.grads_replaced"]) if r]
        changed = [j for j, (after, sent) in enumerate(zip(seen[f"{i}.grads_after"], case["grads"]))
                   if (after is None) != (sent is None) or (sent is not None and not (
                       after.shape == sent.shape and after.dtype == sent.dtype
                       and bool(torch.isclose(after, sent, rtol=0, atol=0, equal_nan=True).all())))]
        if changed:
            fail(f"{case['label']} changed the values of gradient {changed[0]} (of {len(case['grads'])}); it must "
                 "only read them\n  likely cause: an in-place operation on p.grad (p.grad.mul_, .div_, .abs_, "
                 ".pow_, or clipping); compute on p.grad.detach() with out-of-place operations")
        if replaced:
            fail(f"{case['label']} replaced the .grad of tensor {replaced[0]} with another tensor; it must leave "
                 "every .grad as it was\n  likely cause: assigning to p.grad (p.grad = p.grad.float(), ...)")


# ==================================================================================================
# init_weights_
# ==================================================================================================
class ScaledLinear(nn.Linear):
    """A subclass of nn.Linear: isinstance(m, nn.Linear) holds, so it is initialised too."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 2 * super().forward(x)


class GatedLinear(nn.Linear):
    """A Linear that holds another Linear: model.modules() yields it before its gate; Module.apply after."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__(in_features, out_features)
        self.gate = nn.Linear(out_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        return y * torch.sigmoid(self.gate(y))


class Block(nn.Module):
    def __init__(self, shared: nn.Linear) -> None:
        super().__init__()
        self.shared = shared
        self.norm = nn.LayerNorm(shared.out_features)
        self.scale = nn.Parameter(torch.full((shared.out_features,), 0.5))


def build_model(kind: str, dtype: torch.dtype = torch.float32) -> nn.Module:
    """The models the checks initialise; random starting values come from a fixed seed (the judge and the
    runner build the same numbers). A kind ("random", seed) is a drawn model (:func:`random_model`)."""
    if isinstance(kind, tuple):
        return random_model(kind[1])[0].to(dtype)
    torch.manual_seed(1234)
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 7), nn.Tanh(), nn.Linear(7, 3))
    elif kind == "linear":
        model = nn.Linear(4, 6, bias=False)
    elif kind == "nested":
        model = nn.Sequential(nn.Sequential(nn.Linear(3, 4), nn.ReLU()), nn.Sequential(nn.Linear(4, 4, bias=False)),
                              nn.Linear(4, 2))
    elif kind == "mixed":
        model = nn.Sequential(nn.Conv1d(2, 3, 3), nn.Flatten(), nn.Linear(12, 5), nn.LayerNorm(5),
                              ScaledLinear(5, 4), nn.Embedding(6, 4), nn.BatchNorm1d(4), GatedLinear(4, 3))
    elif kind == "shared":
        # One Linear under two parents: model.modules() yields it once; model.apply (and a walk over the
        # children of every module) reaches it twice, drawing its values twice.
        shared = nn.Linear(4, 4)
        model = nn.Sequential(nn.Linear(3, 4), Block(shared), Block(shared), nn.Linear(4, 2))
    elif kind == "attention":
        # MultiheadAttention's out_proj is a Linear subclass; its in_proj_weight is a plain Parameter.
        model = nn.Sequential(nn.MultiheadAttention(4, 2), nn.Linear(4, 4))
    else:
        raise ValueError(kind)
    with torch.no_grad():  # non-zero biases and LayerNorm/BatchNorm values, so "zeroed" and "untouched" show
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape))
    return model.to(dtype)


def model_label(kind: str, dtype: torch.dtype = torch.float32) -> str:
    if isinstance(kind, tuple):
        text = random_model(kind[1])[1]
        return text if dtype == torch.float32 else f"{text}, in {dtype_name(dtype)}"
    text = {"mlp": "Sequential(Linear(5, 7), ReLU(), Linear(7, 7), Tanh(), Linear(7, 3))",
            "linear": "Linear(4, 6, bias=False) (the model is itself a Linear)",
            "nested": "Sequential(Sequential(Linear(3, 4), ReLU()), Sequential(Linear(4, 4, bias=False)), "
                      "Linear(4, 2))",
            "mixed": "Sequential(Conv1d(2, 3, 3), Flatten(), Linear(12, 5), LayerNorm(5), ScaledLinear(5, 4) (a "
                     "subclass of nn.Linear), Embedding(6, 4), BatchNorm1d(4), GatedLinear(4, 3) (a Linear subclass that holds "
                     "another Linear, `gate`))",
            "shared": "Sequential(Linear(3, 4), Block(shared), Block(shared), Linear(4, 2)), where both Blocks hold "
                      "the same Linear(4, 4) `shared` (and a LayerNorm and a Parameter each)",
            "attention": "Sequential(MultiheadAttention(4, 2), Linear(4, 4)) (out_proj inside the attention is a "
                         "Linear subclass; in_proj_weight is not a Linear)"}[kind]
    return text if dtype == torch.float32 else f"{text}, in {dtype_name(dtype)}"


def _parameters_of(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters(remove_duplicate=False)}


@observing
def _initialise(live: Live, cases: list[dict[str, Any]]) -> None:
    init_weights_ = live.student.get("init_weights_")
    for i, case in enumerate(cases):
        model = build_model(case["model"], case["dtype"])
        identities = {name: id(p) for name, p in model.named_parameters(remove_duplicate=False)}
        args: list[Any] = [model, case["scheme"]]
        if case["seed"] is not None:
            args.append(torch.Generator().manual_seed(case["seed"]))
        else:
            torch.manual_seed(case["global_seed"])
        result = live.run(case["label"], init_weights_, *args)
        live.seen[f"{i}.returned_model"] = result is model
        live.seen[f"{i}.returned"] = type(result).__name__
        live.seen[f"{i}.parameters"] = _parameters_of(model)
        live.seen[f"{i}.replaced"] = [name for name, p in model.named_parameters(remove_duplicate=False)
                                      if identities.get(name) != id(p)]


@judge_only
def _expected_init(case: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The specification's calls, in model.modules() order, on the judge's own copy of the model."""
    model = build_model(case["model"], case["dtype"])
    generator = torch.Generator().manual_seed(case["seed"]) if case["seed"] is not None else None
    if generator is None:
        torch.manual_seed(case["global_seed"])
    return _parameters_of(_initialise_as_specified(model, case["scheme"], generator))


@judge_only
def _initialise_as_specified(model: nn.Module, scheme: str, generator: torch.Generator | None) -> nn.Module:
    """The specification's nn.init calls, in model.modules() order."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            if scheme == "xavier_uniform":
                nn.init.xavier_uniform_(module.weight, gain=1.0, generator=generator)
            elif scheme == "kaiming_normal":
                nn.init.kaiming_normal_(module.weight, mode="fan_in", nonlinearity="relu", generator=generator)
            else:
                nn.init.ones_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    return model


def _init_case(model: str, scheme: str, *, seed: int | None = 7, dtype: torch.dtype = torch.float32,
               global_seed: int = 11) -> dict[str, Any]:
    generator = f", torch.Generator().manual_seed({seed})" if seed is not None else \
        f" (no generator; torch.manual_seed({global_seed}) before the call)"
    return {"model": model, "scheme": scheme, "seed": seed, "dtype": dtype, "global_seed": global_seed,
            "label": f"init_weights_(model, {scheme!r}{generator}) with model = {model_label(model, dtype)}"}


def _wrong_init_cause(case: dict[str, Any], name: str, got: torch.Tensor) -> str | None:
    """Name a known wrong initialisation of weight ``name`` when ``got`` is one of them."""
    if not name.endswith("weight") or got.dim() != 2:
        return None
    fan_out, fan_in = got.shape
    std = got.double().std().item() if got.numel() > 1 else 0.0
    bound = got.double().abs().max().item()
    if case["scheme"] == "xavier_uniform":
        right = math.sqrt(6 / (fan_in + fan_out))
        if bound > right * 1.01 and bound <= right * math.sqrt(2) * 1.01:
            return "the gain is sqrt(2) (calculate_gain('relu')); the specification uses gain 1"
    if case["scheme"] == "kaiming_normal" and got.numel() >= 20:
        if abs(std - math.sqrt(2 / fan_out)) < abs(std - math.sqrt(2 / fan_in)) and fan_in != fan_out:
            return "mode='fan_out' was used; the specification uses mode='fan_in'"
        if bound <= math.sqrt(6 / fan_in) * 1.001:
            return "kaiming_uniform_ was used; the specification uses kaiming_normal_"
    return None


def _judge_init(student: Submission, cases: list[dict[str, Any]], *, what: str) -> None:
    seen = observe(student, _initialise, cases)
    for i, case in enumerate(cases):
        expected = _expected_init(case)
        if not seen[f"{i}.returned_model"]:
            fail(f"{case['label']} returned {seen[f'{i}.returned']}; it must return model itself (the same object, "
                 "initialised in place)\n  likely cause: " + ("a missing `return model`" if seen[f"{i}.returned"] ==
                                                               "NoneType" else "a copy of the model was returned"))
        got = seen[f"{i}.parameters"]
        before = build_model(case["model"], case["dtype"])
        start = _parameters_of(before)
        linear_parameters = {f"{n}.{k}" if n else k for n, m in before.named_modules(remove_duplicate=False)
                             if isinstance(m, nn.Linear) for k, _ in m.named_parameters(recurse=False)}
        for name, right in expected.items():
            value = got.get(name)
            if value is None or value.shape != right.shape or value.dtype != right.dtype:
                fail(f"{case['label']}: parameter {name} is now "
                     f"{'missing' if value is None else f'{tuple(value.shape)} {dtype_name(value.dtype)}'}; it must "
                     f"keep its shape {tuple(right.shape)} and dtype {dtype_name(right.dtype)}")
            if torch.equal(value, right):
                continue
            in_linear = name in linear_parameters
            if not in_linear:
                cause = ("only modules with isinstance(m, nn.Linear) are initialised; every other parameter stays as "
                         "it was" if not torch.equal(value, start[name]) else None)
                fail_mismatch(f"{what}: {name} (not part of an nn.Linear) was changed", given=case["label"],
                              expected=f"{name} untouched: {show(start[name])}", got=show(value),
                              where=difference(value, start[name]), cause=cause)
            if name.endswith("bias"):
                cause = ("the bias was left as it was; set it to zeros" if torch.equal(value, start[name]) else
                         "the bias must be zeros (nn.init.zeros_), not drawn at random")
                fail_mismatch(f"{what}: {name} is not zero", given=case["label"], expected="zeros", got=show(value),
                              cause=cause)
            cause = _init_weight_cause(case, name, value, start[name])
            fail_mismatch(f"{what}: {name} differs from the nn.init call on the same generator", given=case["label"],
                          expected=show(right), got=show(value), where=difference(value, right), cause=cause)
        if seen[f"{i}.replaced"]:
            fail(f"{case['label']} replaced the Parameter {seen[f'{i}.replaced'][0]} with a new one; it must fill the "
                 "existing tensors in place (an optimizer made before holds the old ones)\n  likely cause: "
                 "m.weight = nn.Parameter(...); use the nn.init functions (or .copy_/.fill_ under torch.no_grad())")


def _init_weight_cause(case: dict[str, Any], name: str, value: torch.Tensor, start: torch.Tensor) -> str | None:
    if torch.equal(value, start):
        return "this Linear's weight was not initialised at all"
    if case["scheme"] == "ones":
        return "every entry must be exactly 1 (nn.init.ones_)"
    wrong = _wrong_init_cause(case, name, value)
    if wrong:
        return wrong
    right = _expected_init(case).get(name)
    if right is not None and torch.allclose(value, right, rtol=1e-5, atol=1e-7):
        return ("the values agree with the nn.init call only to rounding, not bit for bit: the result must equal "
                "that call's, so call the nn.init function itself (a bound or std computed by hand rounds "
                "differently)")
    # Right distribution, other numbers: the draws came from somewhere else or in another order.
    if case["seed"] is not None:
        return ("the values were not drawn from `generator` in model.modules() order: pass generator=generator to "
                "the nn.init call, and initialise each Linear once, parents before the modules they hold "
                "(model.modules() yields a shared module once; model.apply and a walk over children reach it twice, "
                "and model.apply reaches a module's children before the module)")
    return None


@GRADIENT_NORM_STUDY.check(points=2)
def init_weights_matches_nn_init(student: Submission, device: torch.device) -> None:
    """Each Linear's weight equals the nn.init call of its scheme on the same generator, in modules() order; biases
    zero; in place; returns the model."""
    cases = [_init_case("mlp", "xavier_uniform"), _init_case("mlp", "kaiming_normal", seed=3),
             _init_case("mlp", "ones"), _init_case("linear", "kaiming_normal", seed=5),
             _init_case("nested", "xavier_uniform", seed=9, dtype=torch.float64),
             _init_case("nested", "kaiming_normal", seed=None),
             _init_case("mlp", "xavier_uniform", seed=None, global_seed=4)]
    _judge_init(student, cases, what="the initialised weights")


@GRADIENT_NORM_STUDY.check(points=1)
def init_weights_only_linear(student: Submission, device: torch.device) -> None:
    """Only nn.Linear modules (subclasses included) change, each once even when shared; everything else untouched."""
    cases = [_init_case("mixed", "kaiming_normal"), _init_case("mixed", "ones"),
             _init_case("shared", "xavier_uniform", seed=2), _init_case("shared", "kaiming_normal", seed=8),
             _init_case("attention", "xavier_uniform", seed=1)]
    _judge_init(student, cases, what="init_weights_ on a model with other modules")


@GRADIENT_NORM_STUDY.check(points=1)
def init_weights_rejects_unknown_scheme(student: Submission, device: torch.device) -> None:
    """An unknown scheme raises ValueError; the three known ones do not."""
    _judge_init(student, [_init_case("linear", scheme, seed=4) for scheme in SCHEMES], what="a known scheme")
    cases = [(nn.Linear(3, 2), "Linear(3, 2)", scheme)
             for scheme in ["kaiming_uniform", "xavier", "Xavier_Uniform", "", "one", "zeros"]]
    # The scheme is wrong whatever the model holds: a model without any Linear too.
    cases.append((nn.Sequential(nn.Conv1d(1, 2, 3), nn.ReLU()), "Sequential(Conv1d(1, 2, 3), ReLU())", "normal"))
    for model, shown, scheme in cases:
        expect_error(student, ValueError, "init_weights_", (model, scheme),
                     call=f"init_weights_({shown}, {scheme!r})", why=f"{scheme!r} is not a known scheme",
                     cause="the scheme is checked only when a Linear is found: check it first, whatever the model "
                           "holds" if "Conv1d" in shown else
                     "the scheme is not checked against the three known ones (an if/elif chain without a final "
                     "else: raise ValueError)",
                     other_error_cause="the specification asks for ValueError (a dict lookup raises KeyError: "
                                       "check `scheme in schemes` first)")


# ==================================================================================================
# grad_norm_study
# ==================================================================================================
class ModelFactory:
    """make_model for the study: builds an MLP on the CPU in float32 and remembers every model it built."""

    def __init__(self, sizes: Sequence[int], activation: str = "relu") -> None:
        self.sizes = list(sizes)
        self.activation = activation
        self.built: list[nn.Module] = []

    def __call__(self) -> nn.Module:
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(self.sizes, self.sizes[1:])):
            if i:
                layers.append(nn.ReLU() if self.activation == "relu" else nn.Tanh())
            layers.append(nn.Linear(a, b))
        model = nn.Sequential(*layers)
        self.built.append(model)
        return model

    def label(self) -> str:
        return f"an MLP {'-'.join(map(str, self.sizes))} with {self.activation}"


def study_data(n: int, features: int, outputs: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(n, features, dtype=torch.float64)
    w = torch.randn(features, outputs, dtype=torch.float64)
    y = torch.sin(x @ w) + 0.1 * torch.randn(n, outputs, dtype=torch.float64)
    return x.to(dtype), y.to(dtype)


@judge_only
def reference_study(factory: ModelFactory, inputs: torch.Tensor, targets: torch.Tensor, schemes: Sequence[str],
                    kwargs: dict[str, Any]) -> tuple[dict[str, list[float]], list[dict[str, torch.Tensor]]]:
    """The specification's loop, written out; norms from get_total_norm (which the student may not call)."""
    options = {"epochs": 50, "batch_size": 32, "lr": 0.01, "max_norm": 1.0, "seed": 0, **kwargs}
    study, finals = {}, []
    with one_torch_thread():
        for scheme in schemes:
            model = factory()
            _initialise_as_specified(model, scheme, torch.Generator().manual_seed(options["seed"]))
            model.to(inputs.device, inputs.dtype)
            optimizer = torch.optim.SGD(model.parameters(), lr=options["lr"])
            norms = []
            for _ in range(options["epochs"]):
                for j in range(0, len(inputs), options["batch_size"]):
                    optimizer.zero_grad()
                    loss = F.mse_loss(model(inputs[j:j + options["batch_size"]]), targets[j:j + options["batch_size"]])
                    loss.backward()
                    grads = [p.grad for p in model.parameters() if p.grad is not None]
                    norms.append(float(torch.nn.utils.get_total_norm(grads)))
                    nn.utils.clip_grad_norm_(model.parameters(), options["max_norm"])
                    optimizer.step()
            study[scheme] = norms
            finals.append({name: p.detach().to("cpu").clone() for name, p in model.named_parameters()})
    return study, finals


@observing
def _run_study(live: Live, sizes: list[int], activation: str, inputs: torch.Tensor, targets: torch.Tensor,
               schemes: Any, kwargs: dict[str, Any], device: str) -> None:
    factory = ModelFactory(sizes, activation)
    args = (factory, inputs.to(device), targets.to(device)) + ((schemes,) if schemes is not None else ())
    result = live.run("grad_norm_study(...)", live.student.get("grad_norm_study"), *args, **kwargs)
    live.seen["type"] = type(result).__name__
    if isinstance(result, dict):
        live.seen["keys"] = [str(k) if not isinstance(k, str) else k for k in result]
        live.seen["lists"] = {}
        for key, value in result.items():
            items = list(value) if isinstance(value, (list, tuple)) else None
            live.seen["lists"][str(key)] = {
                "type": type(value).__name__,
                # float subclasses (NumPy's float64 is one) are floats
                "types": sorted({"float" if isinstance(v, float) else f"{type(v).__module__}.{type(v).__name__}"
                                 .removeprefix("builtins.").removeprefix("torch.") for v in items})
                if items is not None else [],
                "values": [float(v) if isinstance(v, (int, float, torch.Tensor)) and (not isinstance(v, torch.Tensor)
                                                                                    or v.numel() == 1) else math.nan
                           for v in items] if items is not None else None}
    live.seen["built"] = len(factory.built)
    live.seen["finals"] = [{name: p.detach().to("cpu").clone() for name, p in model.named_parameters()}
                           for model in factory.built]


class _Study:
    """One run of grad_norm_study: its inputs, its label, the reference, and what the student's run returned."""

    def __init__(self, sizes: Sequence[int], n: int, dtype: torch.dtype, schemes: Sequence[str] | None,
                 activation: str = "relu", **kwargs: Any) -> None:
        self.sizes, self.activation, self.kwargs = list(sizes), activation, kwargs
        self.schemes = schemes
        self.inputs, self.targets = study_data(n, sizes[0], sizes[-1], dtype)
        self.expected, self.finals = reference_study(ModelFactory(sizes, activation), self.inputs, self.targets,
                                                     schemes if schemes is not None else SCHEMES, kwargs)
        shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        self.label = (f"grad_norm_study(make_model, inputs, targets{'' if schemes is None else f', {tuple(schemes)!r}'}"
                      f"{', ' + shown if shown else ''}) with make_model building {ModelFactory(sizes, activation).label()}"
                      f", inputs {tuple(self.inputs.shape)} and targets {tuple(self.targets.shape)} in "
                      f"{dtype_name(dtype)}")

    def run(self, student: Submission, device: torch.device) -> Any:
        return observe(student, _run_study, self.sizes, self.activation, self.inputs, self.targets,
                       list(self.schemes) if self.schemes is not None else None, self.kwargs, str(device))

    @property
    def steps(self) -> int:
        return self.kwargs.get("epochs", 50) * math.ceil(len(self.inputs) / self.kwargs.get("batch_size", 32))


def _judge_shape(study: _Study, seen: Any) -> dict[str, list[float]]:
    """The dict's keys, their order, each list's length and element types; returns the lists."""
    if seen["type"] != "dict":
        fail_mismatch("grad_norm_study must return a dict", given=study.label,
                      expected="{scheme: [norm per step]}", got=f"a {seen['type']}")
    expected_keys = list(study.expected)
    keys = seen["keys"]
    if keys != expected_keys:
        cause = None
        if sorted(keys) == sorted(expected_keys):
            cause = "the keys must come in the order of `schemes` (a dict keeps insertion order)"
        elif set(keys) == set(SCHEMES) and set(expected_keys) != set(SCHEMES):
            cause = "the default schemes were used instead of the `schemes` argument"
        fail_mismatch("grad_norm_study returned other keys", given=study.label, expected=expected_keys, got=keys,
                      cause=cause)
    lists = {}
    for key in expected_keys:
        entry = seen["lists"][key]
        if entry["values"] is None:
            fail(f"{study.label}: the value for {key!r} is a {entry['type']}; it must be a list of floats")
        if entry["types"] and entry["types"] != ["float"]:
            cause = ("record total_grad_norm(...) (a float), or call .item(): a list of tensors keeps them alive "
                     "and each print synchronises with the device" if "Tensor" in entry["types"] else None)
            fail_mismatch(f"the norms for {key!r} must be Python floats", given=study.label, expected="floats",
                          got=f"elements of type {', '.join(entry['types'])}", cause=cause)
        got_steps = len(entry["values"])
        if got_steps != study.steps:
            epochs, batch = study.kwargs.get("epochs", 50), study.kwargs.get("batch_size", 32)
            n = len(study.inputs)
            cause = None
            if got_steps == epochs * (n // batch) and n % batch:
                cause = f"the last, smaller batch ({n % batch} samples) was dropped; it is a step too"
            elif got_steps == epochs:
                cause = "one norm per epoch was recorded; record one per step (per batch)"
            elif got_steps == (epochs + 1) * math.ceil(n / batch) or got_steps == (epochs - 1) * math.ceil(n / batch):
                cause = "the number of epochs is off by one"
            fail_mismatch(f"the list for {key!r} has the wrong length", given=study.label,
                          expected=f"{study.steps} norms (epochs * ceil(len(inputs) / batch_size))",
                          got=f"{got_steps} norms", cause=cause)
        lists[key] = entry["values"]
    return lists


def _judge_norm_lists(study: _Study, lists: dict[str, list[float]], device: torch.device) -> None:
    rtol = STUDY_RTOL if device.type == "cpu" else 1e-3  # other kernels on a GPU: rounding grows over steps
    for key, expected in study.expected.items():
        got = torch.tensor(lists[key], dtype=torch.float64)
        right = torch.tensor(expected, dtype=torch.float64)
        if torch.isclose(got, right, rtol=rtol, atol=STUDY_ATOL, equal_nan=True).all():
            continue
        max_norm = study.kwargs.get("max_norm", 1.0)
        cause = None
        clipped = right.clamp(max=max_norm)
        if torch.isclose(got, clipped, rtol=rtol, atol=STUDY_ATOL).all() and not torch.isclose(clipped, right).all():
            cause = (f"the norms were recorded after clip_grad_norm_: they never exceed max_norm = {max_norm}; record "
                     "them before clipping")
        elif bool((got == 0).all()) and bool((right > 0).all()):
            cause = ("every norm is 0.0: the gradients were zeroed (or not computed yet) when the norm was taken; the "
                     "order is zero_grad, forward, loss, backward, then the norm")
        step = int((~torch.isclose(got, right, rtol=rtol, atol=STUDY_ATOL, equal_nan=True)).nonzero()[0])
        first = (" (already the first step, before any update: look at the initial model — init_weights_ with a "
                 "generator seeded with `seed` for each scheme, then the dtype of inputs — the first batch, "
                 "inputs[0:batch_size], the loss, and the norm itself)" if step == 0 else " (the first steps agree, so look at the update: clipping, the step, "
                                             "the batches)")
        fail_mismatch(f"the gradient norms for {key!r} differ from the specified training", given=study.label,
                      expected=show(right), got=show(got),
                      where=f"from step {step} on (step {step}: expected {show_number(expected[step])}, returned "
                            f"{show_number(lists[key][step])}){first}", cause=cause)


@GRADIENT_NORM_STUDY.check(points=2)
def grad_norm_study_norms(student: Submission, device: torch.device) -> None:
    """The recorded norms equal the specified training's, step by step, for each scheme."""
    for study in [_Study([6, 12, 12, 2], 70, torch.float32, None, epochs=3),
                  _Study([4, 8, 3], 40, torch.float64, ("kaiming_normal", "xavier_uniform"), epochs=2, batch_size=16,
                         lr=0.05, seed=3)]:
        seen = study.run(student, device)
        _judge_norm_lists(study, _judge_shape(study, seen), device)


@GRADIENT_NORM_STUDY.check(points=1)
def grad_norm_study_before_clipping(student: Submission, device: torch.device) -> None:
    """The norms are taken before clipping: with a tiny max_norm they still show the gradients' real size."""
    study = _Study([5, 10, 1], 48, torch.float32, ("xavier_uniform", "ones"), epochs=2, batch_size=16,
                   max_norm=1e-3, lr=0.1)
    seen = study.run(student, device)
    _judge_norm_lists(study, _judge_shape(study, seen), device)


@GRADIENT_NORM_STUDY.check(points=1)
def grad_norm_study_trains_as_specified(student: Submission, device: torch.device) -> None:
    """Each scheme gets one fresh model, trained to the specified parameters; all-ones rows stay identical."""
    study = _Study([3, 6, 6, 2], 50, torch.float64, None, epochs=2, batch_size=20, lr=0.1, max_norm=0.5, seed=5)
    seen = study.run(student, device)
    _judge_shape(study, seen)
    built = seen["built"]
    if built != len(study.expected):
        fail_mismatch("make_model must be called once per scheme", given=study.label,
                      expected=f"{len(study.expected)} calls (one fresh model per scheme)", got=f"{built} calls",
                      cause="one model was reused for every scheme: call make_model() inside the loop over schemes"
                      if built == 1 else None)
    rtol = 1e-6 if device.type == "cpu" else 1e-3
    for scheme, got, right in zip(study.expected, seen["finals"], study.finals):
        for name, value in right.items():
            mine = got.get(name)
            if mine is None or mine.shape != value.shape or mine.dtype != value.dtype:
                fail(f"{study.label}: after training, the {scheme!r} model's {name} is "
                     f"{'missing' if mine is None else f'{tuple(mine.shape)} {dtype_name(mine.dtype)}'}, expected "
                     f"{tuple(value.shape)} {dtype_name(value.dtype)}"
                     + ("\n  likely cause: the model was not moved to inputs.dtype (model.to(inputs.device, "
                        "inputs.dtype))" if mine is not None and mine.dtype != value.dtype else ""))
            if not torch.allclose(mine, value, rtol=rtol, atol=1e-9):
                fail_mismatch(f"the {scheme!r} model ends with other parameters than the specified training gives",
                              given=study.label, expected=f"{name} = {show(value)}", got=show(mine),
                              where=difference(mine, value, rtol=rtol, atol=1e-9) + " (the loop is: zero_grad, "
                              "forward, mse_loss, backward, record, clip_grad_norm_(model.parameters(), max_norm), "
                              "optimizer.step() with SGD(lr), over consecutive batches without shuffling)")
    ones = seen["finals"][SCHEMES.index("ones")]
    hidden = ones["0.weight"]
    if not bool((hidden == hidden[:1]).all()):
        fail(f"{study.label}: after training from all-ones weights, the rows of the first Linear's weight differ; "
             "every hidden unit starts the same, gets the same gradient, and must stay identical")


@GRADIENT_NORM_STUDY.check(points=1)
def grad_norm_study_returns_floats(student: Submission, device: torch.device) -> None:
    """A dict in `schemes` order (any order, any subset) of lists of Python floats, one per step."""
    for study in [_Study([2, 4, 1], 21, torch.float32, ("ones", "xavier_uniform"), epochs=2, batch_size=8),
                  _Study([2, 3, 1], 9, torch.float32, ["kaiming_normal"], epochs=3, batch_size=4, seed=2),
                  _Study([2, 3, 1], 5, torch.float32, ("ones",), epochs=1, batch_size=32)]:
        seen = study.run(student, device)
        _judge_norm_lists(study, _judge_shape(study, seen), device)



# ==================================================================================================
# Generated cases: the specification's domain, drawn (issue 32)
# ==================================================================================================
NORM_TYPES = (None, 1, 1.0, 1.5, 2, 2.0, 3, 3.5, 7.0, float("inf"))
FORMS = ("list", "tuple", "generator", "tensor", "module.parameters()", "dict.values()")
LAYOUTS = ("contiguous", "transposed", "offset", "strided")


def draw_norm_case(rng: Any) -> dict[str, Any]:
    """total_grad_norm's domain: a tensor or any iterable (list, tuple, generator, module.parameters(),
    dict.values()) of 0 to 6 tensors of any shape (0-dim, empty, up to 3 dimensions), float32 or float64 (mixed),
    some without .grad, some frozen with one, gradients contiguous, transposed, at a storage offset or strided,
    small, large or zero, with NaN or inf entries; norm_type left out, an int or a float >= 1, or inf. Magnitudes
    stay where float32 represents |g| ** norm_type (the specification's tolerance is for that arithmetic); float16
    gradients reach 300 and more, whose squares float16 cannot hold (get_total_norm accumulates in float32), while
    their norm stays within float16's range."""
    norm_type = domain.pick(rng, NORM_TYPES)
    p = 2.0 if norm_type is None else float(norm_type)
    form = domain.pick(rng, FORMS)
    count = 1 if form == "tensor" else domain.small_int(rng, 0, 6)
    generator = torch.Generator().manual_seed(rng.randrange(2 ** 31))
    grads, values, requires_grad, layouts = [], [], [], []
    for _ in range(count):
        dims = domain.small_int(rng, 0, 3)
        shape = tuple(domain.small_int(rng, 1 if math.isinf(p) else 0, 4) for _ in range(dims))
        dtype = domain.pick(rng, [torch.float32, torch.float64, torch.float16], [3, 1, 0.6])
        values.append(torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype))
        requires_grad.append(rng.random() < 0.85)
        layouts.append(domain.pick(rng, LAYOUTS, [4, 1, 1, 1]))
        if rng.random() < 0.25:
            grads.append(None)
            continue
        scales = [1e-2, 1.0, 50.0] if p > 4 else [1e-3, 1.0, 50.0, 1e4]
        if dtype == torch.float16:  # past 256 |g| ** 2 overflows float16; the norm itself stays below 65504
            scales = [1e-2, 1.0, 5.0] if p > 4 else [1e-2, 1.0, 300.0] if p >= 2 else [1e-2, 1.0, 20.0]
        grad = torch.randn(shape, generator=generator, dtype=torch.float64) * domain.pick(rng, scales)
        if rng.random() < 0.05:
            grad = torch.zeros(shape, dtype=torch.float64)
        if grad.numel() and rng.random() < 0.12:
            grad.view(-1)[rng.randrange(grad.numel())] = domain.pick(rng, [math.nan, math.inf, -math.inf])
        grads.append(grad.to(dtype))
    return _case(grads, form=form, norm_type=norm_type, requires_grad=requires_grad, values=values, layouts=layouts)


def norm_case_size(case: dict[str, Any]) -> tuple[int, int]:
    return len(case["grads"]), sum(g.numel() for g in case["grads"] if g is not None)


def _flat(tensors: list[Any]) -> torch.Tensor:
    """Tensors as one float64 vector (exact for float32 and float64 values): decoding one tensor is far cheaper
    than decoding hundreds."""
    pieces = [t.detach().reshape(-1).to("cpu", torch.float64) for t in tensors if isinstance(t, torch.Tensor)]
    return torch.cat(pieces) if pieces else torch.zeros(0, dtype=torch.float64)


def _layout_of(tensors: list[Any]) -> list[Any]:
    return [None if not isinstance(t, torch.Tensor) else [list(t.shape), dtype_name(t.dtype)] for t in tensors]


@observing
def _norms_compact(live: Live, cases: list[dict[str, Any]], device: str) -> None:
    """_norms for many cases, the gradients afterwards of every case in one vector."""
    total_grad_norm = live.student.get("total_grad_norm")
    after: list[Any] = []
    live.seen["results"], live.seen["helpers"], live.seen["replaced"], live.seen["layouts"] = [], [], [], []
    for case in cases:
        leaves = _leaves(case, device)
        grads_before = [leaf.grad for leaf in leaves]
        parameters = _passed_as(leaves, case["form"])
        args = (parameters,) if case["norm_type"] is None else (parameters, case["norm_type"])
        watch = _NormHelpersWatch()
        try:
            with watch:
                result = live.run(case["label"], total_grad_norm, *args)
        finally:
            live.seen["helpers"].append(watch.used)
        live.seen["results"].append(_result_facts(result))
        grads_after = [leaf.grad for leaf in leaves]
        live.seen["replaced"].append([a is not b for a, b in zip(grads_after, grads_before)])
        live.seen["layouts"].append(_layout_of(grads_after))
        after.extend(grads_after)
    live.seen["grads_after"] = _flat(after)


def _norm_case_fails(seen: Any, i: int, case: dict[str, Any], offset: int) -> bool:
    """Whether case ``i`` (its gradients at ``offset`` in the vector of all gradients afterwards) went wrong."""
    if i >= len(seen.get("results", [])):
        return True
    facts = seen["results"][i]
    if seen["helpers"][i] or not facts["is_float"] or not _close_number(facts["value"], _expected_norm(case),
                                                                         _case_rtol(case)):
        return True
    if any(seen["replaced"][i]) or seen["layouts"][i] != _layout_of(case["grads"]):
        return True
    sent = _flat(case["grads"])
    return not bool(torch.isclose(seen["grads_after"][offset:offset + len(sent)], sent, rtol=0, atol=0,
                                  equal_nan=True).all())


def observe_in_chunks(student: Submission, scenario: Any, cases: list[Any], chunk: int, *args: Any) -> Seen:
    """One observing scenario over ``cases`` in calls of ``chunk`` cases each (so that no call nears the runner's
    time limit per request), merged: lists joined, tensors concatenated; stops after a call whose code raised."""
    merged: dict[str, Any] = {}
    for start in range(0, len(cases), chunk):
        part = student.scenario(scenario, cases[start:start + chunk], *args)
        for key, value in part.items():
            if key not in merged:
                merged[key] = value
            elif isinstance(value, list):
                merged[key] = merged[key] + value
            elif isinstance(value, torch.Tensor):
                merged[key] = torch.cat([merged[key], value])
            else:
                merged[key] = value
        if "error" in part:
            break
    return Seen(merged)


@GRADIENT_NORM_STUDY.check(points=1)
def total_grad_norm_generated(student: Submission, device: torch.device) -> None:
    """Drawn cases over total_grad_norm's whole domain: the norm, a float, gradients left as they were."""
    cases = domain.draw(draw_norm_case, 160, size=norm_case_size)
    seen = observe_in_chunks(student, _norms_compact, cases, 40, str(device))
    offsets = list(itertools.accumulate([0] + [_flat(case["grads"]).numel() for case in cases]))
    failing = [i for i, case in enumerate(cases) if _norm_case_fails(seen, i, case, offsets[i])]
    if not failing:
        return
    i = min(failing, key=lambda k: norm_case_size(cases[k]))
    if i >= len(seen["results"]):  # the run stopped at the case that raised: the first that failed
        seen.raise_error()
    # The smallest failing case again, observed in full, and judged as the hand-written cases are.
    case = cases[i]
    again = observe(student, _norms, [case], str(device))
    facts = again["0.result"]
    if again["0.helpers"] or not facts["is_float"]:
        _judge_norm(again, 0, case)
    got, expected = facts["value"], _expected_norm(case)
    summary = f"{len(failing)} of {len(cases)} drawn cases fail; the smallest"
    if not _close_number(got, expected, _case_rtol(case)):
        # A cause only when the same known mistake explains every failing value.
        wrong = [k for k in failing if k < len(seen["results"]) and seen["results"][k]["is_float"]
                 and not _close_number(seen["results"][k]["value"], _expected_norm(cases[k]), _case_rtol(cases[k]))]
        causes = {_norm_cause(cases[k], seen["results"][k]["value"], _expected_norm(cases[k])) for k in wrong}
        fail_mismatch(f"total_grad_norm is not the norm of all gradients together ({summary})", given=case["label"],
                      expected=f"{show_number(expected)} (get_total_norm over the gradients, within a relative "
                               f"{_case_rtol(case):g})", got=show_number(got),
                      cause=causes.pop() if len(causes) == 1 and None not in causes else None)
    replaced = [j for j, r in enumerate(again["0.grads_replaced"]) if r]
    if replaced:
        fail(f"{case['label']} replaced the .grad of tensor {replaced[0]} with another tensor; it must leave every "
             f".grad as it was ({summary})")
    fail(f"{case['label']} changed the values of a gradient; it must only read them ({summary})")


# --------------------------------------------------------------------------------------------------
# init_weights_ on drawn models
# --------------------------------------------------------------------------------------------------
class Holder(nn.Module):
    """A plain module whose children are attributes (not a Sequential)."""


def _random_module(rng: Any, depth: int, linears: list[nn.Linear], parts: list[str]) -> nn.Module:
    kinds = ["linear", "linear", "scaled", "gated", "conv", "norm", "embedding", "batchnorm", "bilinear"]
    if depth < 3:
        kinds += ["sequential", "sequential", "modulelist", "moduledict", "holder"]
    if linears:
        kinds.append("shared")
    kind = domain.pick(rng, kinds)
    a, b = rng.randint(1, 6), rng.randint(1, 6)
    bias = rng.random() < 0.75
    if kind == "linear":
        module = nn.Linear(a, b, bias=bias)
        parts.append(f"Linear({a}, {b}{'' if bias else ', bias=False'})")
    elif kind == "scaled":
        module = ScaledLinear(a, b, bias=bias)
        parts.append(f"ScaledLinear({a}, {b}{'' if bias else ', bias=False'}) (a Linear subclass)")
    elif kind == "gated":
        module = GatedLinear(a, b)
        parts.append(f"GatedLinear({a}, {b}) (a Linear holding a Linear `gate`)")
    elif kind == "conv":
        module = nn.Conv1d(a, b, 2)
        parts.append(f"Conv1d({a}, {b}, 2)")
    elif kind == "norm":
        module = nn.LayerNorm(a)
        parts.append(f"LayerNorm({a})")
    elif kind == "embedding":
        module = nn.Embedding(a + 1, b)
        parts.append(f"Embedding({a + 1}, {b})")
    elif kind == "batchnorm":
        module = nn.BatchNorm1d(a)
        parts.append(f"BatchNorm1d({a})")
    elif kind == "bilinear":
        module = nn.Bilinear(a, a, b)
        parts.append(f"Bilinear({a}, {a}, {b}) (not a Linear)")
    elif kind == "shared":
        index = rng.randrange(len(linears))
        parts.append(f"<the Linear #{index + 1} again (shared)>")
        return linears[index]
    else:
        count = domain.small_int(rng, 0 if kind != "sequential" else 1, 3)
        parts.append({"sequential": "Sequential(", "modulelist": "ModuleList([", "moduledict": "ModuleDict({",
                      "holder": "Module("}[kind])
        children = []
        for k in range(count):
            if k:
                parts.append(", ")
            children.append(_random_module(rng, depth + 1, linears, parts))
        parts.append({"sequential": ")", "modulelist": "])", "moduledict": "})", "holder": ")"}[kind])
        if kind == "sequential":
            return nn.Sequential(*children)
        if kind == "modulelist":
            return nn.ModuleList(children)
        if kind == "moduledict":
            return nn.ModuleDict({f"m{k}": child for k, child in enumerate(children)})
        holder = Holder()
        for k, child in enumerate(children):
            setattr(holder, f"part{k}", child)
        return holder
    if isinstance(module, nn.Linear):
        linears.append(module)
        parts[-1] = f"{parts[-1]} #{len(linears)}"
    if isinstance(module, GatedLinear):
        linears.append(module.gate)
    return module


def random_model(seed: int) -> tuple[nn.Module, str]:
    """A model drawn from ``seed`` (the same on both sides): Linears, Linear subclasses (one holding another),
    other modules with parameters, containers nested up to three deep, a Linear shared by two parents."""
    rng = random.Random(seed)
    parts: list[str] = []
    torch.manual_seed(seed % 2 ** 31)
    model = _random_module(rng, 0, [], parts)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape))
    return model, "".join(parts)


def draw_init_case(rng: Any) -> dict[str, Any]:
    """init_weights_'s domain: a drawn model, any of the three schemes, a generator with any seed or none (the
    global generator, seeded), float32 or float64."""
    model = ("random", rng.randrange(10 ** 9))
    scheme = domain.pick(rng, SCHEMES)
    seed = None if rng.random() < 0.2 else rng.randrange(2 ** 40)
    dtype = domain.pick(rng, [torch.float32, torch.float64], [3, 1])
    return _init_case(model, scheme, seed=seed, dtype=dtype, global_seed=rng.randrange(10 ** 6))


def init_case_size(case: dict[str, Any]) -> tuple[int, int]:
    model = build_model(case["model"], case["dtype"])
    return len(list(model.modules())), sum(p.numel() for p in model.parameters())


@observing
def _initialise_compact(live: Live, cases: list[dict[str, Any]]) -> None:
    """_initialise for many cases, each model's parameters afterwards as one vector."""
    init_weights_ = live.student.get("init_weights_")
    for key in ("returned_model", "replaced", "names", "layouts", "parameters"):
        live.seen[key] = []
    for case in cases:
        model = build_model(case["model"], case["dtype"])
        identities = {name: id(p) for name, p in model.named_parameters(remove_duplicate=False)}
        args: list[Any] = [model, case["scheme"]]
        if case["seed"] is not None:
            args.append(torch.Generator().manual_seed(case["seed"]))
        else:
            torch.manual_seed(case["global_seed"])
        result = live.run(case["label"], init_weights_, *args)
        named = list(model.named_parameters(remove_duplicate=False))
        live.seen["returned_model"].append(result is model)
        live.seen["replaced"].append(any(identities.get(name) != id(p) for name, p in named))
        live.seen["names"].append([name for name, _ in named])
        live.seen["layouts"].append(_layout_of([p for _, p in named]))
        live.seen["parameters"].append(_flat([p for _, p in named]))


def _init_case_fails(seen: Any, i: int, case: dict[str, Any]) -> bool:
    if i >= len(seen.get("parameters", [])) or not seen["returned_model"][i] or seen["replaced"][i]:
        return True
    expected = _expected_init(case)
    values = list(expected.values())
    return (seen["names"][i] != list(expected) or seen["layouts"][i] != _layout_of(values)
            or not torch.equal(seen["parameters"][i], _flat(values)))


@GRADIENT_NORM_STUDY.check(points=1)
def init_weights_generated(student: Submission, device: torch.device) -> None:
    """Drawn models (nested containers, Linear subclasses, shared Linears, other modules), schemes, generators and
    dtypes: every parameter exactly as the nn.init calls in model.modules() order leave it."""
    cases = domain.draw(draw_init_case, 30, size=init_case_size)
    seen = observe_in_chunks(student, _initialise_compact, cases, 10)
    failing = [i for i, case in enumerate(cases) if _init_case_fails(seen, i, case)]
    if not failing:
        return
    i = min(failing, key=lambda k: init_case_size(cases[k]))
    if i >= len(seen["parameters"]):  # the run stopped at the case that raised: the first that failed
        seen.raise_error()
    # The smallest failing case again, observed in full and judged as the hand-written cases are.
    _judge_init(student, [cases[i]], what=f"init_weights_ on a drawn model ({len(failing)} of {len(cases)} drawn "
                                          "cases fail; the smallest)")
    fail(f"{cases[i]['label']} gave other parameters than the nn.init calls (a grader error if this shows; please "
         "report it)")


# --------------------------------------------------------------------------------------------------
# grad_norm_study on drawn studies
# --------------------------------------------------------------------------------------------------
def draw_study(rng: Any) -> dict[str, Any]:
    """grad_norm_study's domain: an MLP of 1 to 3 Linears (ReLU or Tanh), 1 to 40 samples, float32 or float64,
    schemes left out or any order and subset (list or tuple), and each keyword left at its default or given: a
    batch size that divides the data or not, larger than it or 1, epochs (the default 50 where a run is cheap),
    lr, max_norm tiny (every step clipped), moderate or far above the norms, and any seed."""
    sizes = [rng.randint(1, 5) for _ in range(domain.small_int(rng, 2, 4))]
    kwargs: dict[str, Any] = {}
    if rng.random() < 0.3:  # epochs and batch_size at their defaults (50, 32): one scheme, one batch per epoch
        n = domain.small_int(rng, 1, 32)
        schemes: Any = domain.pick(rng, [[scheme] for scheme in SCHEMES] + [(scheme,) for scheme in SCHEMES])
    else:
        n = domain.small_int(rng, 1, 40)
        schemes = None
        if rng.random() < 0.6:
            chosen = rng.sample(list(SCHEMES), rng.randint(1, 3))
            schemes = tuple(chosen) if rng.random() < 0.5 else chosen
        kwargs["batch_size"] = domain.pick(rng, [1, rng.randint(1, 12), n, n + rng.randint(1, 5), 32, 33])
        if kwargs["batch_size"] == 32 and rng.random() < 0.5:
            del kwargs["batch_size"]  # the default, on data that may be larger than one batch
        per_epoch = math.ceil(n / kwargs.get("batch_size", 32))
        kwargs["epochs"] = domain.small_int(rng, 1, 3 if per_epoch <= 4 else 1)
    if rng.random() < 0.6:
        kwargs["lr"] = domain.pick(rng, [0.001, 0.05, 0.2])
    if rng.random() < 0.6:
        kwargs["max_norm"] = domain.pick(rng, [1e-3, 0.3, 1e6])
    if rng.random() < 0.6:
        kwargs["seed"] = rng.randrange(2 ** 31)
    return {"sizes": sizes, "n": n, "dtype": domain.pick(rng, [torch.float32, torch.float64]), "schemes": schemes,
            "activation": domain.pick(rng, ["relu", "tanh"]), "kwargs": kwargs, "data_seed": rng.randrange(10 ** 6)}


def study_cost(description: dict[str, Any]) -> int:
    kwargs = description["kwargs"]
    count = len(description["schemes"]) if description["schemes"] is not None else 3
    return count * kwargs.get("epochs", 50) * math.ceil(description["n"] / kwargs.get("batch_size", 32))


def make_study(description: dict[str, Any]) -> "_Study":
    torch.manual_seed(description["data_seed"])
    return _Study(description["sizes"], description["n"], description["dtype"], description["schemes"],
                  description["activation"], **description["kwargs"])


def _run_studies(student: Any, studies: list[tuple[Any, ...]], device: str) -> list[dict[str, Any]]:
    """In the runner: _run_study on each study in turn; stops after the first whose call raised."""
    seen = []
    for args in studies:
        seen.append(_run_study(student, *args, device))
        seen[-1].pop("finals", None)  # not judged here; decoding them would cost more than the study
        if "error" in seen[-1]:
            break
    return seen


def _study_fails(study: "_Study", seen: Any, device: torch.device) -> bool:
    try:
        _judge_norm_lists(study, _judge_shape(study, seen), device)
    except CheckFailed:
        return True
    return False


@GRADIENT_NORM_STUDY.check(points=1)
def grad_norm_study_generated(student: Submission, device: torch.device) -> None:
    """Drawn studies (model sizes, data sizes, dtypes, schemes in any order and subset, every keyword given or left
    at its default): the dict, its keys in order and every recorded norm."""
    descriptions = domain.draw(draw_study, 5, size=study_cost)
    studies = [make_study(d) for d in descriptions]
    arguments = [(s.sizes, s.activation, s.inputs, s.targets, list(s.schemes) if s.schemes is not None else None,
                  s.kwargs) for s in studies]
    seen: list[Seen] = []
    for argument in arguments:  # one call each: a study trains for up to a few hundred steps
        seen.extend(Seen(data) for data in student.scenario(_run_studies, [argument], str(device)))
        if "error" in seen[-1].data:
            break
    failing = [k for k, study in enumerate(studies) if k >= len(seen) or "error" in seen[k].data
               or _study_fails(study, seen[k], device)]
    if not failing:
        return
    for got in seen:  # the run stopped at the study whose code raised
        got.raise_error()
    k = min(failing, key=lambda j: (study_cost(descriptions[j]), descriptions[j]["n"]))
    study = studies[k]
    study.label += f" ({len(failing)} of {len(studies)} drawn studies fail; the smallest)"
    _judge_norm_lists(study, _judge_shape(study, seen[k]), device)
