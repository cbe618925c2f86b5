"""glu (GLU): the reference agrees with PyTorch, and the grader is neither flaky nor fooled by odd answers.

The grader tests hand classes defined in this module to ``graders.check_namespace``. cloudpickle would send
a module-level class by reference, and every runner would then import this module (hypothesis included:
seconds per check); :func:`grade` has them sent by value instead. They still use the reference solutions,
hence ``instructor=True``.
"""

from __future__ import annotations

import contextlib
import math
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import cloudpickle
import graders
from solutions import ch03_modules as reference


def grade(namespace: dict, checks: list[str] | None = None, device: str = "cpu") -> graders.Report:
    """graders.check_namespace("glu", ...) with this module's classes sent by value."""
    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)
    try:
        return graders.check_namespace("glu", namespace, checks, device=device, instructor=True)
    finally:
        with contextlib.suppress(ValueError):
            cloudpickle.unregister_pickle_by_value(module)


# -- the reference agrees with PyTorch (hypothesis makes odd sizes and settings the normal case) -----
@settings(max_examples=60, deadline=None)
@given(in_f=st.integers(1, 7), out_f=st.integers(1, 6), lead=st.lists(st.integers(0, 3), max_size=3),
       bias=st.booleans(), transposed=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_reference_glu_matches_functional(in_f, out_f, lead, bias, transposed, seed):
    torch.manual_seed(seed)
    module = reference.GLU(in_f, out_f, bias=bias).double()
    x = torch.randn(*lead, in_f, dtype=torch.float64)
    if transposed and x.dim() >= 2:
        x = x.transpose(-1, -2).contiguous().transpose(-1, -2)  # the same values, not contiguous
    expected = F.glu(F.linear(x, module.weight, module.bias), dim=-1)
    torch.testing.assert_close(module(x), expected, rtol=1e-12, atol=1e-12)
    assert sorted(module.state_dict()) == (["bias", "weight"] if bias else ["weight"])


@pytest.mark.parametrize("in_f, out_f", [(1, 1), (5, 3), (64, 16)])
def test_reference_glu_initialises_exactly_like_linear(in_f, out_f):
    """Same seed, same draws: the reference's weight and bias are nn.Linear(in, 2 * out)'s."""
    torch.manual_seed(0)
    glu = reference.GLU(in_f, out_f)
    torch.manual_seed(0)
    linear = nn.Linear(in_f, 2 * out_f)
    assert torch.equal(glu.weight, linear.weight) and torch.equal(glu.bias, linear.bias)
    assert reference.GLU(in_f, out_f, bias=False).bias is None


# -- the statistical init check never rejects a correct initialisation ----------------------------
class UniformByHand(nn.Module):
    """nn.Linear's distribution drawn another way (torch.rand scaled), as a student might."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        bound = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter((torch.rand(2 * out_features, in_features) * 2 - 1) * bound)
        self.bias = nn.Parameter((torch.rand(2 * out_features) * 2 - 1) * bound) if bias else None

    def forward(self, x):
        return reference.GLU.forward(self, x)


def _seeded(cls: type, seed: int) -> type:
    """``cls`` drawing its initial values from ``torch.manual_seed(seed)`` (a class made here is sent by value;
    its base ``cls`` by reference)."""

    def __init__(self, *args, **kwargs):
        torch.manual_seed(seed)
        cls.__init__(self, *args, **kwargs)

    return type(f"{cls.__name__}Seed{seed}", (cls,), {"__init__": __init__})


@pytest.mark.parametrize("glu_class", [reference.GLU, UniformByHand], ids=["kaiming_a_sqrt5", "rand_scaled"])
def test_init_check_is_not_flaky(glu_class):
    """The init check on 30 seeds other than the grader's own: a correct draw always passes."""
    for seed in range(30):
        report = grade({"GLU": _seeded(glu_class, seed)}, ["init_like_linear"])
        assert report.passed, f"seed {seed}:\n{report.as_text()}"


class NeverInitialised(nn.Module):
    """A GLU that never initialises its parameters (NaN and inf where torch.empty would leave garbage)."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.full((2 * out_features, in_features), float("nan")))
        bias_value = nn.Parameter(torch.full((2 * out_features,), float("inf"))) if bias else None
        self.register_parameter("bias", bias_value)

    def forward(self, x):
        return reference.GLU.forward(self, x)


def test_uninitialised_glu_fails_only_the_init_check(device):
    """A GLU that never calls reset_parameters() (torch.empty garbage) loses the init points only (the fixed and
    the generated init check): the forward checks refill non-finite parameters, so one slip is not punished
    five times."""
    report = grade({"GLU": NeverInitialised}, device=device)
    failed = [r.name for r in report.results if not r.passed]
    assert failed == ["init_like_linear", "generated_init"], report.as_text()
    for name in failed:
        assert "not finite" in report.results[[r.name for r in report.results].index(name)].message


# -- odd answers fail with a message, never with a grader error -----------------------------------
class _Odd(reference.GLU):
    RETURNS: object = None

    def forward(self, x):
        value = type(self).RETURNS
        return value(x) if callable(value) else value


def _odd(name: str, returns) -> type:
    return type(name, (_Odd,), {"RETURNS": staticmethod(returns) if callable(returns) else returns})


class StringWeight(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = "weight"
        self.bias = 3

    def forward(self, x):
        return x


class NotAModule:
    def __init__(self, in_features, out_features, bias=True):
        pass

    def __call__(self, x):
        return x


@pytest.mark.parametrize("glu_class", [
    _odd("ReturnsNone", None),
    _odd("ReturnsList", lambda x: x.tolist()),
    _odd("ReturnsDict", lambda x: {"out": x}),
    _odd("ReturnsNumpy", lambda x: np.zeros((2, 3))),
    _odd("ReturnsIntTensor", lambda x: torch.zeros(x.shape[:-1] + (3,), dtype=torch.long)),
    _odd("ReturnsScalar", lambda x: x.sum()),
    _odd("ReturnsTuple", lambda x: (x, x)),
    _odd("ReturnsGenerator", lambda x: (v for v in range(3))),
    StringWeight,
    NotAModule,
], ids=lambda c: c.__name__)
def test_odd_answers_fail_without_grader_errors(glu_class, device):
    report = grade({"GLU": glu_class}, device=device)
    assert not report.grader_errors, report.as_text()
    assert report.score == 0, report.as_text()


# -- the generated domain (issue 32): each class the spec allows is drawn ---------------------------
from graders import domain  # noqa: E402
from graders.ch03_modules import glu as glu_grader  # noqa: E402


def _draw(count=500, **options):
    import random

    random.seed(2024)  # what judge.run_checks does before a check
    return domain.draw(lambda g: glu_grader.glu_case(g, **options), count)


CASES = _draw()
INPUTS = [(case, spec) for case in CASES for spec in case.inputs]


@pytest.mark.parametrize("name, holds", [
    ("in_features == out_features", lambda c: c.in_f == c.out_f),
    ("in_features == 2 * out_features", lambda c: c.in_f == 2 * c.out_f),
    ("out_features > in_features", lambda c: c.out_f > c.in_f),
    ("in_features 1", lambda c: c.in_f == 1),
    ("out_features 1", lambda c: c.out_f == 1),
    ("wide (in_features >= 30)", lambda c: c.in_f >= 30 and c.out_f >= 17),
    ("bias=False by keyword", lambda c: c.kwargs.get("bias") is False),
    ("bias=False by position", lambda c: c.args[2:] == (False,)),
    ("bias=True given", lambda c: c.kwargs.get("bias") is True or c.args[2:] == (True,)),
    ("every argument by keyword", lambda c: "in_features" in c.kwargs and "out_features" in c.kwargs),
    ("float64 (.double())", lambda c: c.double),
    ("float32", lambda c: not c.double),
    ("eval mode", lambda c: c.eval_mode),
    ("several inputs to one module", lambda c: len(c.inputs) >= 2),
])
def test_generated_modules_cover(name, holds):
    assert any(holds(c) for c in CASES), name
    assert not all(holds(c) for c in CASES), name


@pytest.mark.parametrize("name, holds", [
    ("a 1-D input", lambda c, s, x: x.dim() == 1),
    ("4 leading dims", lambda c, s, x: x.dim() == 5),
    ("a size-0 leading dim", lambda c, s, x: 0 in x.shape[:-1]),
    ("a size-1 leading dim", lambda c, s, x: 1 in x.shape[:-1]),
    ("transposed (not contiguous)", lambda c, s, x: s.layout == "transposed" and not x.is_contiguous()),
    ("every other feature (strided)", lambda c, s, x: s.layout == "every_other" and x.stride()[-1] == 2),
    ("stride 0 (expanded)", lambda c, s, x: 0 in x.stride() and x.numel() > 1),
    ("a storage offset", lambda c, s, x: x.storage_offset() > 0),
    ("permuted (no dim contiguous)", lambda c, s, x: s.layout == "permuted" and x.dim() >= 3 and x.stride()[-1] != 1),
    ("all zeros", lambda c, s, x: s.values == "zeros" and x.numel() > 0 and not x.any()),
    ("tiny values", lambda c, s, x: s.values == "small" and x.numel() > 0 and x.abs().max() < 0.1),
    ("huge values (1e3 scale)", lambda c, s, x: x.numel() > 0 and x.abs().max() > 500),
    ("saturating the gate", lambda c, s, x: s.values == "saturating" and x.numel() > 0),
    ("x requires grad", lambda c, s, x: s.grad == "requires_grad"),
    ("under torch.no_grad()", lambda c, s, x: s.grad == "no_grad"),
    ("float64 input", lambda c, s, x: x.dtype == torch.float64),
])
def test_generated_inputs_cover(name, holds):
    found = [holds(c, s, glu_grader.glu_input_tensor(s, c.in_f, c.dtype)) for c, s in INPUTS]
    assert any(found), name


def test_generated_inputs_are_reproducible_and_have_the_spec_shape():
    for case, spec in INPUTS[:200]:
        x = glu_grader.glu_input_tensor(spec, case.in_f, case.dtype)
        assert tuple(x.shape) == (*spec.lead, case.in_f) and x.dtype == case.dtype
        assert torch.equal(x, glu_grader.glu_input_tensor(spec, case.in_f, case.dtype))


def test_a_check_draws_the_same_cases_for_its_seed_and_others_for_another():
    assert _draw(40) == _draw(40)
    import random

    random.seed(7)
    assert domain.draw(glu_grader.glu_case, 40) != _draw(40)


def test_generated_checks_draw_counted_cases_and_the_reference_passes(monkeypatch):
    monkeypatch.delenv(domain.SCALE_ENV, raising=False)
    before = domain.DRAWN
    report = grade(vars(reference), ["generated_forward", "generated_gradients", "generated_init"])
    assert report.passed, report.as_text()
    assert domain.DRAWN - before >= 90


class GateOverflows(nn.Module):
    """exp(g) / (1 + exp(g)): NaN once g passes about 88 in float32, which only saturating inputs reach."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.inner = None
        self.weight = reference.GLU(in_features, out_features, bias).weight
        self.bias = reference.GLU(in_features, out_features, bias).bias

    def forward(self, x):
        a, g = F.linear(x, self.weight, self.bias).chunk(2, dim=-1)
        return a * (torch.exp(g) / (1 + torch.exp(g)))


class FlattensLeadingDims(reference.GLU):
    """The leading dims flattened and never restored: wrong for every input that is not 2-D."""

    def forward(self, x):
        return super().forward(x.reshape(-1, x.shape[-1]))


def test_generated_forward_rejects_a_bug_the_fixed_inputs_miss():
    assert grade({"GLU": GateOverflows}, ["forward_matches_glu", "any_leading_dims", "no_bias"]).passed
    (result,) = grade({"GLU": GateOverflows}, ["generated_forward"]).results
    assert result.status == "failed"
    assert "the smallest is shown" in result.message and "returned nan" in result.message


def test_generated_forward_reports_the_smallest_failing_case_and_its_one_cause():
    (result,) = grade({"GLU": FlattensLeadingDims}, ["generated_forward"]).results
    assert result.status == "failed", result.message
    # Every failing case is an input that is not 2-D; the smallest one shown has the fewest elements.
    shown = result.message.split("shape (", 1)[1].split(")", 1)[0]
    sizes = [int(v) for v in shown.split(",") if v.strip()]
    assert len(sizes) != 2 and math.prod(sizes[:-1]) <= 1, result.message
    assert "flattened and not restored" in result.message


def test_a_cause_is_named_only_when_one_catalogued_mistake_fits():
    """A module wrong in two ways at once (halves swapped AND tanh) fits no single mistake: no cause."""

    class TwoMistakes(reference.GLU):
        def forward(self, x):
            a, g = F.linear(x, self.weight, self.bias).chunk(2, dim=-1)
            return g * torch.tanh(a)

    (result,) = grade({"GLU": TwoMistakes}, ["generated_forward"]).results
    assert result.status == "failed" and "likely cause" not in result.message, result.message
