"""running_norm (RunningNorm): the reference agrees with nn.BatchNorm1d, and the grader reports odd answers
and errors precisely (never as grader errors).

The grader tests hand classes defined in this module to ``graders.check_namespace``, sent by value (see
:func:`grade`) so that the runners need not import this module; they use the reference solutions, hence
``instructor=True``.
"""

from __future__ import annotations

import contextlib
import sys

import cloudpickle
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import graders
from solutions import ch03_modules as reference


def grade(namespace: dict, checks: list[str] | None = None, device: str = "cpu") -> graders.Report:
    """graders.check_namespace("running_norm", ...) with this module's classes sent by value."""
    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)
    try:
        return graders.check_namespace("running_norm", namespace, checks, device=device, instructor=True)
    finally:
        with contextlib.suppress(ValueError):
            cloudpickle.unregister_pickle_by_value(module)


# -- the reference agrees with PyTorch -------------------------------------------------------------
@st.composite
def batch_runs(draw):
    features = draw(st.integers(1, 5))
    sizes = draw(st.lists(st.integers(2, 9), min_size=1, max_size=5))
    momentum = draw(st.one_of(st.none(), st.floats(0.0, 1.0)))
    eps = draw(st.sampled_from([1e-5, 1e-3, 0.1]))
    scale = draw(st.sampled_from([1e-3, 1e-1, 1.0, 5.0]))
    return features, sizes, momentum, eps, scale, draw(st.booleans()), draw(st.integers(0, 2**31 - 1))


@settings(max_examples=80, deadline=None)
@given(batch_runs())
def test_reference_running_norm_matches_batchnorm(run):
    features, sizes, momentum, eps, scale, transposed, seed = run
    torch.manual_seed(seed)
    batches = [torch.randn(n, features, dtype=torch.float64) * scale + 0.3 for n in sizes]
    if transposed:
        batches = [b.t().contiguous().t() for b in batches]  # the same values, not contiguous
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


# -- errors are said of the step that raised, after what came before it was judged -----------------
class FailsInEval(reference.RunningNorm):
    def forward(self, x):
        if not self.training:
            raise RuntimeError("eval is not written yet")
        return super().forward(x)


def test_error_names_the_step_that_raised(device):
    report = grade({"RunningNorm": FailsInEval}, ["eval_uses_running_stats", "train_matches_batchnorm"], device)
    by_name = {r.name: r for r in report.results}
    assert by_name["train_matches_batchnorm"].passed, report.as_text()
    failed = by_name["eval_uses_running_stats"]
    assert failed.status == "error", report.as_text()
    assert "in eval mode failed" in failed.message and "eval is not written yet" in failed.message
    assert "test_running_norm.py" in failed.message  # the student's own line


class WrongThenRaises(reference.RunningNorm):
    """Right for one batch, then the output is doubled, then it raises: the wrong output is reported."""

    def forward(self, x):
        calls = getattr(self, "calls", 0)
        self.calls = calls + 1
        if calls == 2:
            raise ValueError("third batch")
        out = super().forward(x)
        return out * 2 if calls == 1 else out


def test_observations_before_an_error_are_judged_first():
    report = grade({"RunningNorm": WrongThenRaises}, ["train_matches_batchnorm"])
    (result,) = report.results
    assert result.status == "failed", report.as_text()
    assert "batch 2 of" in result.message and "wrong output" in result.message


# -- odd answers fail with a message, never with a grader error -----------------------------------
class _Odd(reference.RunningNorm):
    RETURNS: object = None

    def forward(self, x):
        super().forward(x)
        value = type(self).RETURNS
        return value(x) if callable(value) else value


def _odd(name: str, returns) -> type:
    return type(name, (_Odd,), {"RETURNS": staticmethod(returns) if callable(returns) else returns})


class StringBuffers(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.running_mean = "zeros"
        self.running_var = None
        self.num_batches_tracked = 0

    def forward(self, x):
        return x


class BuffersOfWrongShape(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.register_buffer("running_mean", torch.zeros(num_features + 1))
        self.register_buffer("running_var", torch.ones(2, num_features))
        self.register_buffer("num_batches_tracked", torch.zeros(3, dtype=torch.long))

    def forward(self, x):
        return x - x.mean(0)


class NotAModule:
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        pass

    def __call__(self, x):
        return x


@pytest.mark.parametrize("norm_class", [
    _odd("ReturnsNone", None),
    _odd("ReturnsList", lambda x: x.tolist()),
    _odd("ReturnsDict", lambda x: {"out": x}),
    _odd("ReturnsFloat32", lambda x: x.float()),
    _odd("ReturnsScalar", lambda x: x.sum()),
    _odd("ReturnsTransposed", lambda x: x.t()),
    StringBuffers,
    BuffersOfWrongShape,
    NotAModule,
], ids=lambda c: c.__name__)
def test_odd_answers_fail_without_grader_errors(norm_class, device):
    report = grade({"RunningNorm": norm_class}, device=device)
    assert not report.grader_errors, report.as_text()
    assert not report.passed, report.as_text()
