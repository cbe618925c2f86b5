"""gradient_norm_study: the reference against PyTorch (get_total_norm, nn.init, clip_grad_norm_) over the
specification's whole domain, and the grader's own machinery (its watch for forbidden helpers, its models)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from torch import nn

from graders.ch06_amp import gradient_norm_study as grader
from solutions import ch06_amp as reference

NORM_TYPES = st.sampled_from([1, 1.0, 1.5, 2, 2.0, 3.5, 7.0, float("inf")])
DTYPES = st.sampled_from([torch.float32, torch.float64])


@st.composite
def gradients(draw):
    """Leaves with odd gradients: any shape (0-dim, empty, non-contiguous), float32 or float64, some without."""
    leaves = []
    for _ in range(draw(st.integers(0, 5))):
        shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
        dtype = draw(DTYPES)
        leaf = torch.randn(shape, dtype=dtype).requires_grad_(draw(st.booleans()))
        kind = draw(st.sampled_from(["grad", "none", "transposed"]))
        if kind == "grad":
            leaf.grad = torch.randn(shape, dtype=dtype) * draw(st.sampled_from([1e-3, 1.0, 50.0]))
        elif kind == "transposed" and len(shape) == 2:
            leaf.grad = torch.randn(shape[::-1], dtype=dtype).t()
        leaves.append(leaf)
    return leaves


@settings(max_examples=300, deadline=None)
@given(gradients(), NORM_TYPES, st.sampled_from(["list", "tuple", "generator", "tensor"]))
def test_total_grad_norm_equals_get_total_norm(leaves, norm_type, form):
    if form == "tensor":
        leaves = leaves[:1]
    grads = [leaf.grad for leaf in leaves if leaf.grad is not None]
    # The inf-norm of an empty gradient is undefined (no identity for max): get_total_norm raises there too.
    assume(not (math.isinf(norm_type) and any(g.numel() == 0 for g in grads)))
    copies = [g.clone() for g in grads]
    expected = float(torch.nn.utils.get_total_norm([g.clone() for g in grads], norm_type)) if grads else 0.0
    passed = {"list": list, "tuple": tuple, "generator": lambda xs: (x for x in xs)}.get(form)
    parameters = leaves[0] if form == "tensor" and leaves else passed(leaves) if passed else []
    got = reference.total_grad_norm(parameters, norm_type)
    assert type(got) is float
    assert math.isclose(got, expected, rel_tol=1e-5, abs_tol=1e-30)
    assert all(torch.equal(a, b) for a, b in zip(grads, copies))  # read only


@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.5, float("inf")])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_total_grad_norm_of_non_finite_gradients_is_non_finite(norm_type, bad):
    a, b = torch.zeros(3, requires_grad=True), torch.zeros(2, requires_grad=True)
    a.grad, b.grad = torch.tensor([1.0, bad, 2.0]), torch.ones(2)
    got = reference.total_grad_norm([a, b], norm_type)
    expected = float(torch.nn.utils.get_total_norm([a.grad, b.grad], norm_type))
    assert math.isnan(got) == math.isnan(expected) and (math.isnan(got) or got == expected == math.inf)


def test_the_graders_norm_cases_match_get_total_norm_with_the_reference():
    """Every case the checks build is judged right for the reference (the expected value is get_total_norm's)."""
    for case in [grader._case(grader._grads((3, 4), (5,)), norm_type=3.5), grader._case([], form="generator"),
                 grader._case([torch.tensor([1.0, float("nan")])], norm_type=float("inf"))]:
        leaves = grader._leaves(case, "cpu")
        got = reference.total_grad_norm(grader._passed_as(leaves, case["form"]),
                                        2.0 if case["norm_type"] is None else case["norm_type"])
        assert grader._close_number(got, grader._expected_norm(case))


def test_the_watch_sees_get_total_norm_and_clip_grad_norm_however_they_are_reached():
    from torch.nn.utils import clip_grad_norm_ as clip
    from torch.nn.utils import get_total_norm as alias

    p = torch.zeros(3, requires_grad=True)
    p.grad = torch.ones(3)
    for call, label in [(lambda: alias([p.grad]), "get_total_norm"), (lambda: clip([p], 1e9), "clip_grad_norm_"),
                        (lambda: torch.nn.utils.clip_grad.clip_grad_norm_([p], 1e9), "clip_grad_norm_")]:
        watch = grader._NormHelpersWatch()
        with watch:
            call()
        assert any(label in used for used in watch.used), (label, watch.used)
    watch = grader._NormHelpersWatch()
    with watch:
        reference.total_grad_norm([p])
    assert watch.used == []  # the reference computes the norm itself


MODELS = ["mlp", "linear", "nested", "mixed", "shared", "attention"]


@pytest.mark.parametrize("kind", MODELS)
@pytest.mark.parametrize("scheme", reference.SCHEMES)
@pytest.mark.parametrize("seed", [0, 7, None])
def test_init_weights_equals_the_nn_init_calls_in_modules_order(kind, scheme, seed):
    model = grader.build_model(kind)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    expected = grader._expected_init({"model": kind, "scheme": scheme, "seed": seed, "dtype": torch.float32,
                                      "global_seed": 3})
    if seed is None:
        torch.manual_seed(3)
    generator = torch.Generator().manual_seed(seed) if seed is not None else None
    assert reference.init_weights_(model, scheme, generator) is model
    linear = {f"{n}.{k}" if n else k for n, m in model.named_modules() if isinstance(m, nn.Linear)
              for k, _ in m.named_parameters(recurse=False)}
    for name, p in model.named_parameters():
        assert torch.equal(p.detach(), expected[name]), name
        if name not in linear:
            assert torch.equal(p.detach(), before[name]), f"{name} is not a Linear's and must be untouched"
        elif name.endswith("bias"):
            assert not p.detach().any()
        elif scheme == "ones":
            assert (p.detach() == 1).all()


def test_a_shared_linear_is_drawn_once_and_apply_would_draw_it_twice():
    """Why the 'shared' model exists: Module.apply reaches a module held by two parents twice."""
    model = grader.build_model("shared")
    visits = []
    model.apply(lambda m: visits.append(m) if isinstance(m, nn.Linear) else None)
    assert len(visits) == len({id(m) for m in visits}) + 1
    assert sum(isinstance(m, nn.Linear) for m in model.modules()) == len({id(m) for m in visits})


@pytest.mark.parametrize("scheme", ["kaiming_uniform", "Ones", "", "xavier"])
def test_init_weights_rejects_unknown_schemes(scheme):
    with pytest.raises(ValueError):
        reference.init_weights_(nn.Linear(2, 2), scheme)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_reference_study_is_the_graders_loop(dtype):
    """The reference and the grader's own loop (with get_total_norm) agree, and the lists have the spec's length."""
    inputs, targets = grader.study_data(45, 4, 2, dtype)
    kwargs = {"epochs": 2, "batch_size": 16, "lr": 0.05, "max_norm": 0.3, "seed": 4}
    expected, finals = grader.reference_study(grader.ModelFactory([4, 8, 2]), inputs, targets, reference.SCHEMES,
                                              kwargs)
    factory = grader.ModelFactory([4, 8, 2])
    got = reference.grad_norm_study(factory, inputs, targets, **kwargs)
    assert list(got) == list(reference.SCHEMES) and len(factory.built) == 3
    for scheme in reference.SCHEMES:
        assert len(got[scheme]) == 2 * math.ceil(45 / 16)
        assert all(type(v) is float for v in got[scheme])
        torch.testing.assert_close(torch.tensor(got[scheme]), torch.tensor(expected[scheme]), rtol=1e-6, atol=0)
    for model, final in zip(factory.built, finals):
        for name, p in model.named_parameters():
            assert torch.equal(p.detach(), final[name])


def test_all_ones_rows_stay_identical_whatever_the_seed():
    """The property the trains_as_specified check relies on, for several seeds and data."""
    for seed in range(4):
        torch.manual_seed(seed)
        inputs, targets = grader.study_data(40, 3, 2, torch.float64)
        factory = grader.ModelFactory([3, 6, 6, 2])
        reference.grad_norm_study(factory, inputs, targets, ("ones",), epochs=2, batch_size=16, lr=0.1, seed=seed)
        for layer in (factory.built[0][0], factory.built[0][2]):
            assert torch.equal(layer.weight, layer.weight[:1].expand_as(layer.weight))


def test_a_tiny_max_norm_separates_before_from_after_clipping():
    """With max_norm = 1e-3 every norm before clipping exceeds it: norms recorded after clipping are all 1e-3."""
    inputs, targets = grader.study_data(48, 5, 1, torch.float32)
    study = reference.grad_norm_study(grader.ModelFactory([5, 10, 1]), inputs, targets, ("xavier_uniform", "ones"),
                                      epochs=2, batch_size=16, max_norm=1e-3, lr=0.1)
    assert all(v > 1e-2 for norms in study.values() for v in norms)
