"""gelu_function: the reference against PyTorch, and the grader's own machinery (causes, the watch)."""

from __future__ import annotations

import math
import pathlib
import random

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import graders
from graders.ch02_autograd import gelu_function as grader
from solutions import ch02_autograd as reference
from tests.submissions import cases


# -- the reference agrees with F.gelu on random shapes, strides and dtypes --------------------------
@st.composite
def strided_inputs(draw):
    shape = draw(st.lists(st.integers(0, 4), max_size=4))
    steps = [draw(st.integers(1, 3)) for _ in shape]
    transpose = len(shape) >= 2 and draw(st.booleans())
    scale = draw(st.sampled_from([0.5, 3.0, 10.0]))
    dtype = draw(st.sampled_from([torch.float32, torch.float64, torch.bfloat16]))
    seed = draw(st.integers(0, 2**16))
    base = torch.randn([n * s for n, s in zip(shape, steps)], generator=torch.Generator().manual_seed(seed)) * scale
    x = base[tuple(slice(None, None, s) for s in steps)].to(dtype)  # .to() keeps strides (preserve_format)
    return x.transpose(0, 1) if transpose else x


@settings(max_examples=150, deadline=None)
@given(strided_inputs())
def test_reference_gelu_matches_torch(x):
    rtol, atol = grader._TOLERANCE[x.dtype] if x.dtype != torch.float64 else (1e-12, 1e-14)
    leaf = x.detach().clone().requires_grad_(True)
    got = reference.GELUFunction.apply(leaf)
    torch.testing.assert_close(got, F.gelu(x, approximate="tanh"), rtol=rtol, atol=atol)
    grad_output = torch.randn(x.shape, generator=torch.Generator().manual_seed(0)).to(x.dtype)
    (got_grad,) = torch.autograd.grad(got, leaf, grad_output)
    rtol, atol = grader._GRAD_TOLERANCE[x.dtype]
    torch.testing.assert_close(got_grad, grader._torch_gelu_grad(x, grad_output), rtol=rtol, atol=atol)


def test_reference_gelu_gradcheck():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(reference.GELUFunction.apply, (x,))


def test_reference_gelu_detects_inplace_change():
    """The spec's promise: an in-place change of the input after forward makes backward raise."""
    leaf = torch.randn(5, requires_grad=True)
    x = leaf * 1.0
    out = reference.GELUFunction.apply(x)
    x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_expected_gradient_of_a_view_is_autograds():
    """The judge's expected gradient w.r.t. the base of a strided view is what autograd gives for the view."""
    base = torch.randn(4, 7, dtype=torch.float64)
    x = base[1:, 2::2]
    view = (tuple(x.shape), tuple(x.stride()), x.storage_offset())
    grad_output = torch.randn(x.shape, dtype=torch.float64)
    leaf = base.clone().requires_grad_(True)
    F.gelu(leaf[1:, 2::2], approximate="tanh").backward(grad_output)
    torch.testing.assert_close(grader._torch_gelu_grad_of_view(base, view, grad_output), leaf.grad)


# -- the named causes: each known slip is singled out by its own values ------------------------------
def _slip_values(x: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    b, k = math.sqrt(2 / math.pi), 0.044715
    return [
        ("0.44715", grader._tanh_gelu(x, kappa=0.44715)),
        ("sqrt(pi/2)", grader._tanh_gelu(x, beta=math.sqrt(math.pi / 2))),
        ("sqrt(2*pi)", grader._tanh_gelu(x, beta=math.sqrt(2 * math.pi))),
        ("without the square root", grader._tanh_gelu(x, beta=2 / math.pi)),
        ("the 0.5 factor is missing", grader._tanh_gelu(x, half=1.0)),
        ("x**2 is used", grader._tanh_gelu(x, power=2)),
        ("cubic term", grader._tanh_gelu(x, kappa=0.0)),
        ("exact GELU", 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))),
        ("factor 2 is missing", x * torch.sigmoid(b * (x + k * x**3))),
        ("factor x in front", 0.5 * (1 + torch.tanh(b * (x + k * x**3)))),
    ]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_forward_causes_are_named(dtype):
    x = grader._gelu_values(dtype, torch.device("cpu"))
    for words, wrong in _slip_values(x.double()):
        cause = grader._forward_cause(x, wrong.to(dtype))
        assert cause is not None and words in cause, (words, cause)
    assert grader._forward_cause(x, F.gelu(x, approximate="tanh")) is None


def test_rounded_constant_is_named_in_float64():
    x = grader._gelu_values(torch.float64, torch.device("cpu"))
    assert "rounded to 0.0447" in grader._forward_cause(x, grader._tanh_gelu(x, kappa=0.0447))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_backward_causes_are_named(dtype):
    x = grader._gelu_values(dtype, torch.device("cpu"))
    grad_output = torch.randn(x.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    for derivative, cause in grader._derivative_variants(x.double()):
        got = (grad_output.double() * derivative).to(dtype)
        assert grader._backward_cause(x, grad_output, got) == cause
    right = grader._torch_gelu_grad(x, grad_output)
    assert grader._backward_cause(x, grad_output, right) is None


# -- the grader ----------------------------------------------------------------------------------------
def test_reference_passes(device):
    report = graders.check_namespace("gelu_function", vars(reference), device=device, instructor=True)
    assert report.passed and report.score == report.max_score == 8, report.as_text()
    assert not report.notes, report.notes


class _DelegatesThroughTorchFunc(torch.autograd.Function):
    """Right values, but backward asks torch.func.vjp for the derivative (not an explicit backward)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        _, pullback = torch.func.vjp(lambda t: 0.5 * t * (1 + torch.tanh(math.sqrt(2 / math.pi) * (
            t + 0.044715 * t**3))), x)
        return pullback(grad_output)[0]


def test_backward_through_torch_func_is_not_explicit():
    report = graders.check_namespace("gelu_function", {"GELUFunction": _DelegatesThroughTorchFunc},
                                     ["computes_formula_itself", "backward_matches_torch"], device="cpu",
                                     instructor=True)  # this test module imports the reference answers
    by_name = {r.name: r for r in report.results}
    assert by_name["backward_matches_torch"].passed, report.as_text()
    assert not by_name["computes_formula_itself"].passed
    assert "asks autograd for the derivative" in by_name["computes_formula_itself"].message


def test_notebook_answer_with_once_differentiable_is_graded():
    path = next(p.values[1] for p in cases("ch02_autograd", "correct_once_differentiable")
                if p.values[0] == "gelu_function")
    namespace = {"__name__": "__main__"}
    exec(compile(path.read_text(), "<ipython-input-1-0>", "exec"), namespace)  # as a notebook cell defines it
    report = graders.check_namespace("gelu_function", namespace, ["forward_matches_torch"], device="cpu")
    assert report.passed, report.as_text()


def test_gelu_catalogue_has_required_styles():
    """The issue asks for a setup_context solution and a once_differentiable one among the correct ones."""
    texts = [p.values[1].read_text() for p in cases("ch02_autograd", "correct_") if p.values[0] == "gelu_function"]
    assert any("def setup_context" in t for t in texts)
    assert any("@once_differentiable" in t for t in texts)


def test_checks():
    checks = [c.name for c in graders.get_exercise("gelu_function").checks]
    assert checks == ["forward_matches_torch", "backward_matches_torch", "gradcheck_float64", "bfloat16",
                      "any_shape_and_layout", "two_calls_in_one_graph", "saves_input_for_backward",
                      "computes_formula_itself"]


# -- the generated domain: every class the specification allows, and the checks that use it -----------------
def _drawn(count: int = 500, seed: int = 0, **options) -> list:
    generator = random.Random(seed)
    return [grader.generate_case(generator, **options) for _ in range(count)]


def _x(case):
    return grader._gen_expected(case, "cpu")["x"]


def test_the_generator_draws_every_dtype_layout_and_rank():
    cases = _drawn()
    assert {c.dtype for c in cases} == {"float32", "float64", "bfloat16"}
    assert {c.layout for c in cases} == set(grader._LAYOUTS)
    assert {len(_x(c).shape) for c in cases} == {0, 1, 2, 3, 4}
    assert any(_x(c).numel() == 0 for c in cases) and any(_x(c).numel() == 1 for c in cases)
    assert any(_x(c).numel() > 200 for c in cases)


def test_the_generated_layouts_are_what_they_say():
    for case in _drawn(300, seed=1):
        x = _x(case)
        if x.numel() < 2 or min(x.shape, default=0) < 2:
            continue
        if case.layout == "expanded" and 0 in x.stride():
            assert not x.is_contiguous()
        if case.layout in ("transposed", "permuted", "sliced", "offset"):
            assert not x.is_contiguous() or case.layout == "permuted"
        if case.layout == "offset":
            assert x.storage_offset() > 0


def test_the_generator_draws_values_at_the_edges_of_the_representation():
    cases = _drawn()
    values = {v for c in cases for v in c.edges}
    assert {0.0, 1e-40, 30.0, -30.0, 1e5, -1e5} <= values  # subnormal; exp(2u) overflows float32 from |x| ~ 12
    assert max(abs(v) for v in values) <= 1e5  # a float32 x**3 is finite there: every order of the terms holds
    assert any(math.copysign(1.0, v) < 0 and v == 0 for c in cases for v in c.edges)  # -0.0
    assert {c.scale for c in cases} >= {1e-3, 40.0}
    x = torch.tensor([1e5, -1e5])
    assert torch.isfinite(0.5 * x * (1 + 3 * 0.044715 * x**2)).all()


def test_the_generator_draws_every_state_of_requires_grad_and_grad_output():
    cases = _drawn()
    assert {c.grad for c in cases} == {"random", "zeros", "transposed", "expanded", "none"}
    assert any(not c.requires_grad for c in cases)
    forward_only = _drawn(200, grads=False)  # forward only: x requiring grad or not
    assert any(c.requires_grad for c in forward_only) and any(not c.requires_grad for c in forward_only)
    noncontiguous = [grader._gen_expected(c, "cpu")["grad_output"] for c in cases if c.grad == "transposed"]
    assert any(g.dim() >= 3 and not g.is_contiguous() for g in noncontiguous)
    # what y.sum() hands backward: one value, every stride 0 (a backward writing into grad_output raises there)
    expanded = [grader._gen_expected(c, "cpu")["grad_output"] for c in cases if c.grad == "expanded"]
    assert any(g.numel() > 1 and set(g.stride()) == {0} for g in expanded)
    assert all(c.grad == "none" for c in _drawn(100, grads=False))
    assert all(c.grad != "none" for c in _drawn(100, grads=True))


@pytest.mark.parametrize("seed", [0, 1])
def test_the_reference_and_every_correct_answer_pass_the_generated_inputs(seed):
    """No false rejection: the judge's verdict on the reference's (and the correct fixtures') observations."""
    import runpy
    from pathlib import Path

    class Direct:
        @staticmethod
        def run(function, *args, **kwargs):
            return function(*args, **kwargs)

    folder = Path(__file__).parent / "submissions" / "ch02_autograd" / "gelu_function"
    classes = [reference.GELUFunction] + [runpy.run_path(str(p))["GELUFunction"] for p in folder.glob("correct_*.py")]
    for case in _drawn(400, seed=seed):
        e = grader._gen_expected(case, "cpu")
        for cls in classes:
            leaf = e["base"].detach().clone().requires_grad_(case.requires_grad)
            x = leaf if case.view is None else leaf.as_strided(*case.view)
            obs = grader._forward_and_backward(Direct, cls, leaf, x, e["grad_output"])
            assert not grader._gen_fails(case, e, obs), (cls, case)


def test_shrinking_keeps_the_shape_and_simplifies_the_rest():
    for case in _drawn(100, seed=3):
        for smaller in grader.smaller_cases(case):
            assert _x(smaller).shape == _x(case).shape
            assert smaller.size() <= case.size()


SATURATION_SHORTCUT = """
import math
import torch

class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        u = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
        t = torch.tanh(u)
        d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * x * x)
        return grad_output * torch.where(x.abs() > 100, torch.zeros_like(d), d)  # "saturated: no gradient"
"""


def test_a_derivative_wrong_only_past_the_hand_written_values_fails_the_generated_inputs_smallest_first(tmp_path):
    """The hand-written values stop at |x| = 30; the generated ones reach 1e3 and 1e5, where the derivative is 1
    for positive x (a 'saturated, so no gradient' shortcut zeroes it)."""
    path = tmp_path / "answer.py"
    path.write_text(SATURATION_SHORTCUT)
    report = graders.check_file("gelu_function", str(path), ["backward_matches_torch"], device="cpu")
    (result,) = report.results
    assert not result.passed
    assert "generated inputs tried failed; the smallest one" in result.message
