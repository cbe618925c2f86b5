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
    """A GLU that never calls reset_parameters() (torch.empty garbage) loses the init point only: the
    forward checks refill non-finite parameters, so one slip is not punished five times."""
    report = grade({"GLU": NeverInitialised}, device=device)
    failed = [r.name for r in report.results if not r.passed]
    assert failed == ["init_like_linear"], report.as_text()
    assert "not finite" in report.results[[r.name for r in report.results].index("init_like_linear")].message


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
