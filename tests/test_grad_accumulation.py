"""grad_accumulation: the reference equals ordinary training on concatenated windows; the grader builds the
same objects in the judge and in the student's process (the optimizer over that model's parameters); odd
answers fail without grader errors.
"""

from __future__ import annotations

import copy
import pathlib
import random

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import graders
from graders.ch02_autograd import grad_accumulation as grader
from solutions import ch02_autograd as reference


# -- the reference equals ordinary training on concatenated windows ---------------------------------
@settings(max_examples=25, deadline=None)
@given(windows=st.integers(1, 4), accum=st.integers(1, 4), momentum=st.sampled_from([0.0, 0.9]),
       seed=st.integers(0, 2**16))
def test_reference_accumulation_equals_ordinary_training(windows, accum, momentum, seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()
    batches = [(torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 1, dtype=torch.float64))
               for _ in range(windows * accum)]
    twin = copy.deepcopy(model)
    twin_opt = torch.optim.SGD(twin.parameters(), lr=0.1, momentum=momentum)
    expected_losses = []
    for w in range(windows):
        window = batches[w * accum:(w + 1) * accum]
        twin_opt.zero_grad()
        loss = F.mse_loss(twin(torch.cat([x for x, _ in window])), torch.cat([y for _, y in window]))
        loss.backward()
        twin_opt.step()
        expected_losses.append(loss.item())
    for p in model.parameters():
        p.grad = torch.full_like(p, 3.0)  # left over from before: must not leak in
    got = reference.train_with_accumulation(model, batches, F.mse_loss,
                                            torch.optim.SGD(model.parameters(), lr=0.1, momentum=momentum), accum)
    assert all(type(v) is float for v in got)
    assert got == pytest.approx(expected_losses, rel=1e-9)
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("n, accum", [(4, 0), (4, -1), (5, 2), (3, 2), (2, 4)])
def test_reference_accumulation_rejects_bad_windows(n, accum):
    model = torch.nn.Linear(2, 1)
    batches = [(torch.randn(2, 2), torch.randn(2, 1))] * n
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError):
        reference.train_with_accumulation(model, batches, F.mse_loss, optimizer, accum)


# -- the grader's objects and its ordinary training -------------------------------------------------
SPECS = [
    dict(n_micro=12, accum=3, options={"lr": 0.1}),
    dict(arch="classifier", n_micro=6, accum=2, options={"lr": 0.2}, loss="cross_entropy", dtype=torch.float32),
    dict(n_micro=6, accum=3, loss="smooth_l1", options={"lr": 0.05, "momentum": 0.9, "nesterov": True,
                                                        "weight_decay": 0.01}),
    dict(n_micro=8, accum=4, optimizer="Adam", options={"lr": 0.01}),
    dict(arch="frozen", n_micro=6, accum=2, optimizer="AdamW", options={"lr": 0.01, "weight_decay": 0.1},
         per_layer=True),
    dict(n_micro=6, accum=2, options={"lr": 0.1}, junk=True),
]


@pytest.mark.parametrize("kwargs", SPECS, ids=lambda k: f"{k.get('arch', 'mlp')}-{k.get('optimizer', 'SGD')}")
def test_ordinary_training_equals_the_reference_on_the_built_objects(kwargs):
    """The judge's expected parameters (one step per concatenated window) are what the reference reaches on
    the objects the student receives: build() gives an optimizer over that very model's parameters."""
    kwargs = dict(kwargs)
    spec = grader._spec(kwargs.pop("arch", "mlp"), **kwargs)
    model, micro_batches, loss_fn, optimizer = grader.build(spec, "cpu")
    owned = {id(p) for p in model.parameters()}
    assert all(id(p) in owned for group in optimizer.param_groups for p in group["params"])
    expected = grader._ordinary_training(spec, "cpu")
    losses = reference.train_with_accumulation(model, micro_batches, loss_fn, optimizer, spec.accum)
    assert losses == pytest.approx(expected.losses, rel=1e-6)
    for name, p in model.named_parameters():
        assert grader._close(p.detach(), expected.params[name], spec.dtype), name
        assert not torch.equal(expected.params[name], expected.initial[name]) or not p.requires_grad, name


def test_every_training_check_moves_the_parameters():
    """A function that does nothing leaves the initial parameters, which no training check accepts."""
    for kwargs in SPECS:
        kwargs = dict(kwargs)
        spec = grader._spec(kwargs.pop("arch", "mlp"), **kwargs)
        expected = grader._ordinary_training(spec, "cpu")
        assert any(not grader._close(expected.params[n], expected.initial[n], spec.dtype) for n in expected.params)


def test_scenario_observes_each_step(monkeypatch):
    """run_training, called directly: one gradient per step, the parameters around each step, the losses."""

    class Direct:
        def call(self, name, *args):
            assert name == "train_with_accumulation"
            return reference.train_with_accumulation(*args)

    spec = grader._spec(n_micro=6, accum=3, options={"lr": 0.1}, measure=True)
    observed = grader.run_training(Direct(), spec, "cpu")
    expected = grader._ordinary_training(spec, "cpu")
    assert len(observed["steps"]) == len(observed["before"]) == len(observed["after"]) == 2
    for got, want in zip(observed["steps"], expected.step_grads):
        assert grader._close(got, want, spec.dtype)
    assert observed["result"] == pytest.approx([sum(m) / 3 for m in observed["before"]], rel=1e-12)
    assert observed["result"] == pytest.approx(expected.losses, rel=1e-9)


def test_reference_passes(device):
    report = graders.check_namespace("grad_accumulation", vars(reference), device=device, instructor=True)
    assert report.passed, report.as_text()
    assert report.score == report.max_score == len(report.results)


# -- odd answers fail with a message, never with a grader error ------------------------------------
# Written as source and run here, so cloudpickle sends the functions by value: the runner then need not import
# this test module (and pytest and hypothesis with it) for every check.
ODD_ANSWERS = """
import numpy as np
import torch
from solutions.ch02_autograd import train_with_accumulation as right


def returns_tuple(*args):
    return tuple(right(*args))


def returns_dict(*args):
    return dict(enumerate(right(*args)))


def returns_generator(*args):
    return (v for v in right(*args))


def returns_strings(*args):
    return [str(v) for v in right(*args)]


def returns_float32(*args):
    return [np.float32(v) for v in right(*args)]


def returns_nested(*args):
    return [[v] for v in right(*args)]


def returns_nan(*args):
    return [float("nan") for v in right(*args)]


def returns_tensors_with_grad(*args):
    return [torch.tensor(v, requires_grad=True) * 1 for v in right(*args)]


def returns_model(model, *args):
    right(model, *args)
    return model


def mutates_micro_batches(model, micro_batches, *args):
    losses = right(model, micro_batches, *args)
    micro_batches.clear()
    return losses


def returns_bool(*args):
    right(*args)
    return True


class Unreadable(list):
    def __iter__(self):
        raise RuntimeError("cannot iterate")


def returns_unreadable_list(*args):
    return Unreadable(right(*args))
"""
_namespace = {"__name__": "odd_grad_accumulation_answers"}
exec(compile(ODD_ANSWERS, "<odd grad_accumulation answers>", "exec"), _namespace)
ODD = {name: f for name, f in _namespace.items() if name.startswith(("returns_", "mutates_"))}


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_answers_fail_without_grader_errors(name, device):
    report = graders.check_namespace("grad_accumulation", {"train_with_accumulation": ODD[name]}, device=device,
                                     instructor=True)
    assert not report.grader_errors, report.as_text()
    if name == "mutates_micro_batches":  # the spec does not forbid it: emptying the list afterwards is allowed
        assert report.passed, report.as_text()
    else:
        assert not report.passed, report.as_text()


def test_checks():
    assert 6 <= len(graders.get_exercise("grad_accumulation").checks) <= 10


# -- the generated domain: every class the specification allows, and the checks that use it -----------------
def _drawn(count: int = 300, seed: int = 0, generate=None, **options) -> list:
    generator = random.Random(seed)
    torch.manual_seed(seed)
    make = generate or (lambda g: grader.generate_spec(g, **options))
    return [make(generator) for _ in range(count)]


class _Direct:
    def call(self, name, *args):
        assert name == "train_with_accumulation"
        return reference.train_with_accumulation(*args)


def test_the_generator_draws_every_relation_of_micro_batches_to_accum_steps():
    specs = _drawn()
    pairs = {(len(s.data), s.accum) for s in specs}
    assert any(n == a > 1 for n, a in pairs) and any(a == 1 and n > 1 for n, a in pairs)
    assert any(n >= 2 * a > 2 for n, a in pairs)  # several windows of several micro-batches
    assert {len(s.data) for s in _drawn(60, relations=("empty",))} == {0}
    invalid = _drawn(300, generate=grader.generate_invalid_spec)
    kinds = {(a < 1, len(s.data) == 0, 0 < len(s.data) < a, a < len(s.data) < 2 * a,
              a > 1 and len(s.data) % a == 1) for s in invalid for a in [s.accum]}
    assert any(k[0] and k[1] for k in kinds) and any(k[0] and not k[1] for k in kinds)  # accum < 1, 0 micro too
    assert any(k[2] for k in kinds) and any(k[3] for k in kinds) and any(k[4] for k in kinds)
    assert all(s.accum < 1 or len(s.data) % s.accum for s in invalid)


def test_the_generator_draws_every_model_loss_dtype_batch_and_optimizer():
    specs = _drawn()
    assert {s.arch for s in specs} == set(grader._ARCHITECTURES)
    assert {s.loss for s in specs} == set(grader._LOSSES)
    assert {s.dtype for s in specs} == {torch.float32, torch.float64}
    assert {len(s.data[0][0]) for s in specs if s.data} == set(grader._BATCH_SIZES)
    assert {(s.optimizer, tuple(s.options.items())) for s in specs} == {
        (name, tuple(options.items())) for name, options in grader._GENERATED_OPTIMIZERS["any"]}
    assert any(s.per_layer for s in specs) and not all(s.per_layer for s in specs)


def test_the_nested_model_is_one_level_deeper_and_the_unused_parameter_keeps_grad_none():
    nested = grader._ARCHITECTURES["nested"][0]()
    assert any(isinstance(m, torch.nn.Sequential) for m in nested[0].modules())
    assert any(not p.requires_grad for p in nested.parameters())
    spec = grader._spec("unused", n_micro=2, accum=2)
    model, micro_batches, loss_fn, optimizer = grader.build(spec, "cpu")
    reference.train_with_accumulation(model, micro_batches, loss_fn, optimizer, 2)
    assert model.spare.weight.grad is None and model.body[0].weight.grad is not None


def test_the_generator_draws_leftover_gradients_everywhere_or_somewhere_and_optimizer_state():
    specs = _drawn(200, leftovers=1.0)
    assert all(s.junk is not None for s in specs)
    assert any(all(j is not None for j in s.junk) for s in specs if s.arch == "mlp")
    assert any(any(j is None for j in s.junk) and any(j is not None for j in s.junk) for s in specs)
    stepped = [s for s in specs if s.prestep]
    assert stepped and len(stepped) < len(specs)
    _, _, _, optimizer = grader.build(next(s for s in stepped if s.optimizer == "Adam" or s.options.get("momentum")),
                                      "cpu")
    assert optimizer.state  # momentum buffers or Adam's moments exist before the call
    assert not any(s.junk for s in _drawn(50, leftovers=0.0))


def test_the_generator_draws_gradient_norms_far_above_one():
    """A clip to norm 1 that should not be there acts on them (and not on every call)."""
    norms = []
    for spec in _drawn(60, seed=1):
        if spec.data:
            norms.append(float(grader._ordinary_training(spec, "cpu", diagnose=False).step_grads[0].norm()))
    assert max(norms) > 10 and min(norms) < 1


def test_the_reference_passes_every_generated_call():
    for spec in _drawn(120, seed=2):
        observed = grader.run_training(_Direct(), spec, "cpu")
        assert grader._generated_failure(spec, observed, grader._ordinary_training(spec, "cpu")) is None, \
            spec.describe()


def test_shrinking_keeps_a_call_valid_and_makes_it_smaller():
    for spec in _drawn(60, seed=3):
        for smaller in grader.smaller_specs(spec):
            assert smaller.accum >= 1 and len(smaller.data) % smaller.accum == 0
            assert grader.spec_size(smaller) <= grader.spec_size(spec)


def test_clearing_the_optimizer_state_fails_only_the_generated_calls_with_the_smallest_one_shown():
    path = (pathlib.Path(__file__).parent / "submissions" / "ch02_autograd" / "grad_accumulation"
            / "bug_clears_optimizer_state.py")
    report = graders.check_file("grad_accumulation", str(path), device="cpu")
    failed = {r.name: r.message for r in report.results if not r.passed}
    assert list(failed) == ["leftover_grads_ignored"], report.as_text()
    assert "generated calls tried failed; the smallest one" in failed["leftover_grads_ignored"]
    assert "the optimizer already stepped once before the call" in failed["leftover_grads_ignored"]
