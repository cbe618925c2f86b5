"""Chapter 03 (modules): references and graders for glu (GLU) and running_norm (RunningNorm)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from graders import ch03_modules as checks
from graders.core import Submission, seed_everything
from solutions import ch03_modules as reference


# -- the references agree with PyTorch (hypothesis makes odd sizes and settings the normal case) -----
@settings(max_examples=60, deadline=None)
@given(in_f=st.integers(1, 7), out_f=st.integers(1, 6), lead=st.lists(st.integers(1, 3), max_size=3),
       bias=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_reference_glu_matches_functional(in_f, out_f, lead, bias, seed):
    torch.manual_seed(seed)
    module = reference.GLU(in_f, out_f, bias=bias).double()
    x = torch.randn(*lead, in_f, dtype=torch.float64)
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


@st.composite
def batch_runs(draw):
    features = draw(st.integers(1, 5))
    sizes = draw(st.lists(st.integers(2, 9), min_size=1, max_size=5))
    momentum = draw(st.one_of(st.none(), st.floats(0.0, 1.0)))
    eps = draw(st.sampled_from([1e-5, 1e-3, 0.1]))
    scale = draw(st.sampled_from([1e-3, 1e-1, 1.0, 5.0]))
    return features, sizes, momentum, eps, scale, draw(st.integers(0, 2**31 - 1))


@settings(max_examples=80, deadline=None)
@given(batch_runs())
def test_reference_running_norm_matches_batchnorm(run):
    features, sizes, momentum, eps, scale, seed = run
    torch.manual_seed(seed)
    batches = [torch.randn(n, features, dtype=torch.float64) * scale + 0.3 for n in sizes]
    ours = reference.RunningNorm(features, momentum=momentum, eps=eps).double()
    bn = nn.BatchNorm1d(features, eps=eps, momentum=momentum, affine=False, dtype=torch.float64)
    for x in batches:
        torch.testing.assert_close(ours(x), bn(x), rtol=1e-9, atol=1e-9)
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            torch.testing.assert_close(getattr(ours, name), getattr(bn, name), rtol=1e-9, atol=1e-15)
    ours.eval(), bn.eval()
    before = {k: v.clone() for k, v in ours.state_dict().items()}
    torch.testing.assert_close(ours(batches[0]), bn(batches[0]), rtol=1e-9, atol=1e-9)
    assert all(torch.equal(before[k], v) for k, v in ours.state_dict().items())


def test_reference_running_norm_buffers_are_clean():
    module = reference.RunningNorm(3)
    x = torch.randn(4, 3, requires_grad=True)
    module(x).sum().backward()
    assert x.grad is not None and list(module.parameters()) == []
    assert all(b.grad_fn is None and not b.requires_grad for b in module.buffers())
    assert sorted(module.state_dict()) == ["num_batches_tracked", "running_mean", "running_var"]


# -- the statistical init check never rejects a correct initialisation ----------------------------
class _UniformByHand(nn.Module):
    """nn.Linear's distribution drawn another way (torch.rand scaled), as a student might."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        bound = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter((torch.rand(2 * out_features, in_features) * 2 - 1) * bound)
        self.bias = nn.Parameter((torch.rand(2 * out_features) * 2 - 1) * bound) if bias else None


@pytest.mark.parametrize("glu_class", [reference.GLU, _UniformByHand], ids=["kaiming_a_sqrt5", "rand_scaled"])
def test_init_check_is_not_flaky(glu_class):
    """The init check on 300 seeds other than the grader's own: a correct draw always passes."""
    student = Submission({"GLU": glu_class}, timeout=None)
    for seed in range(300):
        seed_everything(seed)
        checks.init_like_linear(student, torch.device("cpu"))


def test_uninitialised_glu_fails_only_the_init_check():
    """A GLU that never calls reset_parameters() (torch.empty garbage) loses the init point only: the
    forward checks refill non-finite parameters, so one slip is not punished five times."""
    import graders

    class NeverInitialised(torch.nn.Module):
        def __init__(self, in_features, out_features, bias=True):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.full((2 * out_features, in_features), float("nan")))
            bias_value = torch.nn.Parameter(torch.full((2 * out_features,), float("inf"))) if bias else None
            self.register_parameter("bias", bias_value)

        def forward(self, x):
            return reference.GLU.forward(self, x)

    report = graders.check_namespace("glu", {"GLU": NeverInitialised}, device="cpu")
    failed = [r.name for r in report.results if not r.passed]
    assert failed == ["init_like_linear"], report.as_text()
