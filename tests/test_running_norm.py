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


# -- the generated domain (issue 32): each class the spec allows is drawn ---------------------------
from graders import domain  # noqa: E402
from graders.ch03_modules import running_norm as norm_grader  # noqa: E402


def _draw_runs(count=500):
    import random

    random.seed(2024)  # what judge.run_checks does before a check
    return domain.draw(norm_grader.norm_run, count)


RUNS = _draw_runs()
STEPS = [(run, step) for run in RUNS for step in run.steps]


@pytest.mark.parametrize("name, holds", [
    ("momentum=None", lambda r: r.momentum is None),
    ("momentum 0", lambda r: r.momentum == 0.0),
    ("momentum 1", lambda r: r.momentum == 1.0),
    ("momentum strictly between 0 and 1, not 0.1", lambda r: r.momentum is not None and 0 < r.momentum < 1
     and r.momentum != 0.1),
    ("eps far below the default", lambda r: r.eps < 1e-6),
    ("eps near 1", lambda r: r.eps > 0.1),
    ("momentum and eps by position", lambda r: len(r.args) == 3),
    ("momentum alone by position", lambda r: len(r.args) == 2),
    ("num_features by keyword", lambda r: "num_features" in r.kwargs),
    ("one feature", lambda r: r.features == 1),
    ("wide (60+ features)", lambda r: r.features >= 60),
    ("float32 (no .double())", lambda r: not r.double),
    ("float64", lambda r: r.double),
    ("eval mode first (the initial buffers)", lambda r: r.steps[0].kind == "eval"),
    ("load_state_dict, then training", lambda r: any(a.kind == "load" and b.kind == "train"
                                                     for a, b in zip(r.steps, r.steps[1:]))),
    ("eval, then training again", lambda r: any(a.kind == "eval" and b.kind == "train"
                                                for a, b in zip(r.steps, r.steps[1:]))),
    ("momentum=None continuing after load_state_dict", lambda r: r.momentum is None and any(
        a.kind == "load" and b.kind == "train" for a, b in zip(r.steps, r.steps[1:]))),
    ("6 steps", lambda r: len(r.steps) == 6),
])
def test_generated_runs_cover(name, holds):
    assert any(holds(r) for r in RUNS), name
    assert not all(holds(r) for r in RUNS), name


def _batch(run, step):
    return norm_grader.norm_batch(run, step)


@pytest.mark.parametrize("name, holds", [
    ("a training batch of 2 (the N / (N - 1) edge)", lambda r, s: s.kind == "train" and s.n == 2),
    ("a training batch above 40", lambda r, s: s.kind == "train" and s.n > 40),
    ("an eval batch of 1", lambda r, s: s.kind == "eval" and s.n == 1),
    ("an empty eval batch", lambda r, s: s.kind == "eval" and s.n == 0),
    ("transposed", lambda r, s: s.kind != "load" and s.n > 1 and r.features > 1 and not _batch(r, s).is_contiguous()
     and _batch(r, s).stride()[0] == 1),
    ("every other element", lambda r, s: s.kind != "load" and s.n > 0 and _batch(r, s).stride()[-1] == 2),
    ("a storage offset", lambda r, s: s.kind != "load" and _batch(r, s).storage_offset() > 0),
    ("expanded rows: a zero variance", lambda r, s: s.kind == "train" and _batch(r, s).stride()[0] == 0),
    ("a feature whose variance is far below eps", lambda r, s: s.kind == "train" and bool(
        (_batch(r, s).double().var(0) < 1e-3 * r.eps).any())),
    ("x requires grad", lambda r, s: s.grad == "requires_grad" and s.kind != "load"),
    ("backward through the output", lambda r, s: s.grad == "backward" and s.kind == "train"),
    ("backward in eval mode", lambda r, s: s.grad == "backward" and s.kind == "eval"),
    ("a loaded count past 256", lambda r, s: s.kind == "load" and int(
        norm_grader.norm_state(r, s)["num_batches_tracked"]) > 256),
])
def test_generated_steps_cover(name, holds):
    assert any(holds(r, s) for r, s in STEPS), name


def test_the_mistake_free_simulation_is_batchnorm():
    """The judge's model of catalogued mistakes, with none, takes every step exactly as nn.BatchNorm1d."""
    for run in RUNS[:120]:
        inputs = {(0, s): norm_grader.norm_state(run, st) if st.kind == "load" else
                  (norm_grader.norm_batch(run, st), norm_grader.norm_upstream(run, st))
                  for s, st in enumerate(run.steps)}
        want = norm_grader._norm_trace(run, inputs)
        got = norm_grader._norm_simulate(run, inputs, "none")
        for a, b in zip(want, got):
            if "out" in a:
                torch.testing.assert_close(b["out"], a["out"], rtol=1e-9, atol=1e-9)
            for name in ("running_mean", "running_var"):
                torch.testing.assert_close(b["buffers"][name], a["buffers"][name], rtol=1e-9, atol=1e-12)
            assert int(b["buffers"]["num_batches_tracked"]) == int(a["buffers"]["num_batches_tracked"])


class OwnCounter(reference.RunningNorm):
    """momentum=None averaged over a Python counter of its own: right until load_state_dict restores a count."""

    def forward(self, x):
        if self.training and self.momentum is None:
            self.steps = getattr(self, "steps", 0) + 1
            with torch.no_grad():
                self.num_batches_tracked += 1
                f = 1.0 / self.steps
                self.running_mean.lerp_(x.mean(0), f)
                self.running_var.lerp_(x.var(0, unbiased=True), f)
            return (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + self.eps)
        return super().forward(x)


def test_generated_runs_reject_a_bug_the_fixed_runs_miss_and_name_its_cause():
    fixed = [c.name for c in graders.get_exercise("running_norm").checks if c.name != "generated_runs"]
    assert grade({"RunningNorm": OwnCounter}, fixed).passed
    (result,) = grade({"RunningNorm": OwnCounter}, ["generated_runs"]).results
    assert result.status == "failed", result.message
    assert "the smallest" in result.message and "load_state_dict" in result.message
    assert "likely cause: the cumulative factor counts the batches this object has seen" in result.message


def test_generated_runs_show_the_smallest_failing_run():
    """Eval mode wrong: every failing run is cut at its first eval step, and the one shown has the fewest steps."""

    class EvalWithoutEps(reference.RunningNorm):
        def forward(self, x):
            if not self.training:
                return (x - self.running_mean) / torch.sqrt(self.running_var)
            return super().forward(x)

    (result,) = grade({"RunningNorm": EvalWithoutEps}, ["generated_runs"]).results
    assert result.status == "failed", result.message
    shown = result.message.split("the smallest:", 1)[1].split("at the last step", 1)[0]
    assert shown.count("out = m(x)") <= 2 and "eval mode" in shown.splitlines()[-2], result.message
