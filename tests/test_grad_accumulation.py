"""grad_accumulation: the reference equals ordinary training on concatenated windows; the grader builds the
same objects in the judge and in the student's process (the optimizer over that model's parameters); odd
answers fail without grader errors.
"""

from __future__ import annotations

import copy

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
