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


# ==================================================================================================
# The generated domains (issue 32): each class the generators must produce, and the checks they feed
# ==================================================================================================
import random  # noqa: E402

import graders  # noqa: E402


def _grads_of(case):
    return [g for g in case["grads"] if g is not None]


@pytest.fixture(scope="module")
def norm_cases():
    return [grader.draw_norm_case(random.Random(f"norm-{k}")) for k in range(500)]


@pytest.mark.parametrize("name, holds", [
    ("every form", lambda cs: {c["form"] for c in cs} == set(grader.FORMS)),
    ("norm_type left out, int, float and inf", lambda cs: {repr(c["norm_type"]) for c in cs}
     >= {"None", "1", "2", "3", "1.5", "3.5", "7.0", "inf"}),
    ("no tensors at all", lambda cs: any(not c["grads"] for c in cs)),
    ("six tensors (more than any hand-written case)", lambda cs: any(len(c["grads"]) == 6 for c in cs)),
    ("tensors without .grad among others", lambda cs: any(None in c["grads"] and _grads_of(c) for c in cs)),
    ("only tensors without .grad", lambda cs: any(c["grads"] and not _grads_of(c) for c in cs)),
    ("a frozen tensor holding a gradient", lambda cs: any(not r and g is not None for c in cs
                                                          for g, r in zip(c["grads"], c["requires_grad"]))),
    ("a 0-dim gradient", lambda cs: any(g.dim() == 0 for c in cs for g in _grads_of(c))),
    ("an empty gradient", lambda cs: any(g.numel() == 0 for c in cs for g in _grads_of(c))),
    ("a 3-dim gradient", lambda cs: any(g.dim() == 3 for c in cs for g in _grads_of(c))),
    ("float32 and float64 mixed", lambda cs: any({g.dtype for g in _grads_of(c)} == {torch.float32, torch.float64}
                                                 for c in cs)),
    ("NaN, inf and -inf entries", lambda cs: all(any(bool(f(g).any()) for c in cs for g in _grads_of(c)) for f in
                                                 (torch.isnan, lambda g: g == math.inf, lambda g: g == -math.inf))),
    ("an all-zero gradient", lambda cs: any(g.numel() and not g.any() for c in cs for g in _grads_of(c))),
    ("large gradients (norms far above 1)", lambda cs: any(g.abs().max() > 1e3 for c in cs for g in _grads_of(c)
                                                           if g.numel())),
    ("float16 gradients whose squares float16 cannot hold", lambda cs: any(
        g.dtype == torch.float16 and g.numel() and float(g.abs().max()) > 256 for c in cs for g in _grads_of(c))),
    ("every layout", lambda cs: {l for c in cs for g, l in zip(c["grads"], c["layouts"]) if g is not None
                                 and g.dim() >= 2 and g.numel() > 1} == set(grader.LAYOUTS)),
])
def test_the_norm_generator_draws(norm_cases, name, holds):
    assert holds(norm_cases), name


def test_the_layouts_are_built_in_the_runner():
    """Transposed and strided gradients are not contiguous there, an offset one starts past its storage's start."""
    case = grader._case([torch.randn(3, 4)] * 4, layouts=["contiguous", "transposed", "offset", "strided"])
    leaves = grader._leaves(case, "cpu")
    assert leaves[0].grad.is_contiguous() and not leaves[1].grad.is_contiguous()
    assert leaves[2].grad.storage_offset() > 0 and not leaves[3].grad.is_contiguous()
    assert all(torch.equal(leaf.grad, case["grads"][0]) for leaf in leaves)


def test_the_reference_total_grad_norm_is_right_on_drawn_cases(norm_cases):
    for case in norm_cases:
        leaves = grader._leaves(case, "cpu")
        args = () if case["norm_type"] is None else (case["norm_type"],)
        got = reference.total_grad_norm(grader._passed_as(leaves, case["form"]), *args)
        assert grader._close_number(got, grader._expected_norm(case)), case["label"]


@pytest.fixture(scope="module")
def init_cases():
    return [grader.draw_init_case(random.Random(f"init-{k}")) for k in range(300)]


def _modules_of(case):
    return list(grader.build_model(case["model"], case["dtype"]).modules())


@pytest.mark.parametrize("name, holds", [
    ("every scheme", lambda cs: {c["scheme"] for c in cs} == set(grader.SCHEMES)),
    ("no generator (the global one)", lambda cs: any(c["seed"] is None for c in cs)),
    ("a seed past 2**32", lambda cs: any(c["seed"] is not None and c["seed"] >= 2 ** 32 for c in cs)),
    ("float64", lambda cs: any(c["dtype"] == torch.float64 for c in cs)),
    ("a Linear shared by two parents", lambda cs: any(len(list(grader.build_model(c["model"]).named_modules(
        remove_duplicate=False))) > len(_modules_of(c)) for c in cs)),
    ("containers three deep", lambda cs: any(sum(isinstance(m, (nn.Sequential, nn.ModuleList, nn.ModuleDict,
                                                                 grader.Holder)) for m in _modules_of(c)) >= 3
                                             for c in cs)),
    ("ModuleList, ModuleDict and a plain Module", lambda cs: all(any(isinstance(m, kind) for c in cs
                                                                     for m in _modules_of(c))
                                                                 for kind in (nn.ModuleList, nn.ModuleDict,
                                                                              grader.Holder))),
    ("Linear subclasses, one holding a Linear", lambda cs: all(any(isinstance(m, kind) for c in cs
                                                                   for m in _modules_of(c))
                                                               for kind in (grader.ScaledLinear, grader.GatedLinear))),
    ("a Linear without bias", lambda cs: any(isinstance(m, nn.Linear) and m.bias is None for c in cs
                                             for m in _modules_of(c))),
    ("no Linear at all", lambda cs: any(not any(isinstance(m, nn.Linear) for m in _modules_of(c)) for c in cs)),
    ("the model itself a Linear", lambda cs: any(isinstance(grader.build_model(c["model"]), nn.Linear) for c in cs)),
    ("other modules with parameters", lambda cs: all(any(isinstance(m, kind) for c in cs for m in _modules_of(c))
                                                     for kind in (nn.Conv1d, nn.LayerNorm, nn.Embedding,
                                                                  nn.BatchNorm1d, nn.Bilinear))),
])
def test_the_init_generator_draws(init_cases, name, holds):
    assert holds(init_cases), name


def test_the_reference_init_is_right_on_drawn_models(init_cases):
    for case in init_cases[:120]:
        model = grader.build_model(case["model"], case["dtype"])
        if case["seed"] is None:
            torch.manual_seed(case["global_seed"])
        generator = torch.Generator().manual_seed(case["seed"]) if case["seed"] is not None else None
        reference.init_weights_(model, case["scheme"], generator)
        expected = grader._expected_init(case)
        got = grader._parameters_of(model)
        assert list(got) == list(expected) and all(torch.equal(got[k], expected[k]) for k in got), case["label"]


@pytest.fixture(scope="module")
def studies():
    return [grader.draw_study(random.Random(f"study-{k}")) for k in range(500)]


@pytest.mark.parametrize("name, holds", [
    ("epochs at its default", lambda ds: any("epochs" not in d["kwargs"] for d in ds)),
    ("batch_size at its default on more than one batch", lambda ds: any("batch_size" not in d["kwargs"]
                                                                        and d["n"] > 32 for d in ds)),
    ("a last batch smaller than the others", lambda ds: any(d["n"] % d["kwargs"].get("batch_size", 32)
                                                            and d["n"] > d["kwargs"].get("batch_size", 32)
                                                            for d in ds)),
    ("a batch larger than the data", lambda ds: any(d["kwargs"].get("batch_size", 32) > d["n"] for d in ds)),
    ("a batch of one", lambda ds: any(d["kwargs"].get("batch_size") == 1 for d in ds)),
    ("schemes left out, a list, a tuple", lambda ds: {type(d["schemes"]) for d in ds} == {type(None), list, tuple}),
    ("schemes in another order", lambda ds: any(d["schemes"] is not None and len(d["schemes"]) > 1 and
                                                list(d["schemes"]) != sorted(d["schemes"], key=grader.SCHEMES.index)
                                                for d in ds)),
    ("a tiny max_norm (every step clipped)", lambda ds: any(d["kwargs"].get("max_norm") == 1e-3 for d in ds)),
    ("float64 and tanh", lambda ds: any(d["dtype"] == torch.float64 for d in ds)
     and any(d["activation"] == "tanh" for d in ds)),
    ("one sample", lambda ds: any(d["n"] == 1 for d in ds)),
])
def test_the_study_generator_draws(studies, name, holds):
    assert holds(studies), name


def _fixture(name):
    from pathlib import Path

    return Path(__file__).parent / "submissions" / "ch06_amp" / "gradient_norm_study" / name


def test_the_generated_study_check_rejects_a_wrong_default_and_reports_the_smallest_study():
    report = graders.check_file("gradient_norm_study", str(_fixture("bug_study_default_epochs.py")),
                                ["grad_norm_study_generated"], device="cpu")
    result, = report.results
    assert not result.passed and "the smallest" in result.message and "50 norms" in result.message


def test_the_generated_norm_check_rejects_a_bug_and_reports_the_smallest_case(tmp_path):
    """A norm over the first four gradients only passes every hand-written case (none has more); the generated check
    finds it and reports a case with more than four gradients."""
    source = _fixture("correct_python_floats.py").read_text()
    path = tmp_path / "first_four.py"
    path.write_text(source + '''

_right = total_grad_norm


def total_grad_norm(parameters, norm_type=2.0):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    kept = [p for p in parameters if p.grad is not None][:4]
    return _right(kept, norm_type)
''')
    report = graders.check_file("gradient_norm_study", str(path), ["total_grad_norm_values",
                                                                    "total_grad_norm_generated"], device="cpu")
    by_name = {r.name: r for r in report.results}
    assert by_name["total_grad_norm_values"].passed
    message = by_name["total_grad_norm_generated"].message
    assert not by_name["total_grad_norm_generated"].passed and "the smallest" in message
    assert message.count("(grad ") >= 5
